/** startSweep: a domain's periodic sweep never runs twice at once, survives a failed run, and stops cleanly. */
import { startSweep } from '../src/sweep'

const quiet = () => ({ error: jest.fn() })

it('joins the run under way instead of starting a second one', async () => {
  let runs = 0
  let finish!: () => void
  const sweep = startSweep('test sweep', () => new Promise<void>((resolve) => { runs++; finish = resolve }), 0, quiet())
  const a = sweep.runOnce()
  const b = sweep.runOnce()
  expect(runs).toBe(1)
  finish()
  await Promise.all([a, b])
  // the run ended: the next one is a new run
  const c = sweep.runOnce()
  expect(runs).toBe(2)
  finish()
  await c
})

it('logs a failed run under its name, and the next run goes ahead', async () => {
  const logger = quiet()
  let runs = 0
  const sweep = startSweep('test sweep', async () => {
    if (++runs === 1) throw new Error('database away')
  }, 0, logger)
  await sweep.runOnce()
  expect(logger.error).toHaveBeenCalledWith({ err: expect.objectContaining({ message: 'database away' }) }, 'test sweep failed')
  await sweep.runOnce()
  expect(runs).toBe(2)
  expect(logger.error).toHaveBeenCalledTimes(1)
})

it('runs every interval until stopped, and stop waits for the run in progress', async () => {
  let runs = 0
  let inRun = false
  const sweep = startSweep('test sweep', async () => {
    runs++
    inRun = true
    await new Promise((r) => setTimeout(r, 30))
    inRun = false
  }, 10, quiet())
  while (runs < 2) await new Promise((r) => setTimeout(r, 5))
  await sweep.stop()
  expect(inRun).toBe(false)
  const after = runs
  await new Promise((r) => setTimeout(r, 50))
  expect(runs).toBe(after)
})
