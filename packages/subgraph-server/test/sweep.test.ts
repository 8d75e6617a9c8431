/**
 * startSweep: a domain's periodic sweep never runs twice at once, survives a failed run, and stops cleanly.
 * startPrune: a retention prune runs at start too, and logs how many it deleted.
 * finishEach: a sweep's items each on its own.
 */
import { finishEach, startPrune, startSweep } from '../src/sweep'

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

it('a prune runs once at start, without waiting for its interval, and logs only a run that deleted something', async () => {
  const logger = { info: jest.fn(), error: jest.fn() }
  const deletions = [3, 0]
  const prune = startPrune('test prune', async () => deletions.shift() ?? 0, 3_600_000, logger, 'test: deleted')
  while (deletions.length > 1) await new Promise((r) => setTimeout(r, 5))
  await prune.runOnce() // joins the start's run if it is still under way, else runs the second
  await prune.runOnce()
  expect(deletions).toEqual([])
  expect(logger.info).toHaveBeenCalledTimes(1)
  expect(logger.info).toHaveBeenCalledWith({ deleted: 3 }, 'test: deleted')
  await prune.stop()
})

it('finishEach runs every item, one that fails holding up none after it, and throws once all ran', async () => {
  const ran: number[] = []
  const finish = async (n: number) => {
    ran.push(n)
    if (n === 2) throw new Error('database away')
  }
  const failed = await finishEach('items', [1, 2, 3], finish).catch((err: unknown) => err)
  expect(ran).toEqual([1, 2, 3])
  expect(failed).toBeInstanceOf(AggregateError)
  expect((failed as AggregateError).message).toBe('1 of 3 items failed (2 finished)')
  expect((failed as AggregateError).errors.map((e: Error) => e.message)).toEqual(['database away'])
  expect(await finishEach('items', [1, 3], finish)).toBe(2)
})
