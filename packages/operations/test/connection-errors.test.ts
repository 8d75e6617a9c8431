/** A backing service's connection errors are logged as warn lines, at most one per interval (not one per reconnect). */
import { EventEmitter } from 'node:events'
import { logConnectionErrors } from '../src'

test('a burst of connection errors is one warn line per interval, each with its error', async () => {
  const emitter = new EventEmitter()
  const lines: { err: unknown; msg: string }[] = []
  logConnectionErrors(emitter, { warn: (obj, msg) => void lines.push({ err: (obj as { err: unknown }).err, msg }) }, 'redis: connection error', 200)
  const errors = Array.from({ length: 5 }, (_, i) => new Error(`connect ECONNREFUSED #${i}`))
  for (const err of errors) emitter.emit('error', err)
  expect(lines).toEqual([{ err: errors[0], msg: 'redis: connection error' }])
  await new Promise((r) => setTimeout(r, 250))
  emitter.emit('error', errors[4])
  expect(lines).toHaveLength(2)
  // with no logger, errors are still listened to (an EventEmitter without an 'error' listener throws)
  const quiet = new EventEmitter()
  logConnectionErrors(quiet, undefined, 'ignored')
  expect(() => quiet.emit('error', new Error('x'))).not.toThrow()
})
