/** A backing service's connection errors are logged as warn lines, at most one per interval (not one per reconnect). */
import { EventEmitter } from 'node:events'
import { logConnectionErrors, logRedisOutage } from '../src'

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

test("a Redis outage met by workers: one warn line per interval with how long it has lasted, one info line when it ends; other errors stay error lines", async () => {
  const worker = new EventEmitter()
  const other = new EventEmitter()
  const connection = new EventEmitter()
  const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = []
  const at = (level: string) => (obj: object, msg: string) => void lines.push({ level, obj: obj as Record<string, unknown>, msg })
  logRedisOutage([worker, other], connection, { warn: at('warn'), info: at('info'), error: at('error') }, 'events workers', 200)
  const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' })
  for (let i = 0; i < 20; i++) (i % 2 ? worker : other).emit('error', refused())
  expect(lines).toEqual([{ level: 'warn', obj: { err: { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:6379' }, failingForMs: 0 }, msg: 'events workers: Redis is away; waiting for it' }])
  await new Promise((r) => setTimeout(r, 250))
  worker.emit('error', Object.assign(new Error('Connection is closed.'), {}))
  expect(lines).toHaveLength(2)
  expect(lines[1]!.obj.failingForMs).toBeGreaterThanOrEqual(200)
  // a fault of the code, not of the connection: each is an error line
  worker.emit('error', new Error('Missing lock for job 1. moveToFinished'))
  expect(lines.at(-1)).toMatchObject({ level: 'error', msg: 'events workers: error' })
  connection.emit('ready')
  expect(lines.at(-1)).toMatchObject({ level: 'info', msg: 'events workers: Redis is back', obj: { failedForMs: expect.any(Number) } })
  // a reconnect with no outage says nothing; the next outage is told again at once
  const count = lines.length
  connection.emit('ready')
  expect(lines).toHaveLength(count)
  other.emit('error', refused())
  expect(lines.at(-1)).toMatchObject({ level: 'warn', obj: { failingForMs: 0 } })
})
