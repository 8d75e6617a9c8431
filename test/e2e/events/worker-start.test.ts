/**
 * A workers process that cannot start (its operations port is taken: a second one started on the same host with the
 * same WORKERS_PORT) exits 1 before it takes any job. Before, its workers took jobs first and the process exited
 * with them in hand: they waited out their locks, and an attempt could be made twice. The worker is its own OS
 * process (`tsx services/events/src/workers/main.ts`), on the stack's FerretDB and Redis.
 */
import { spawn } from 'node:child_process'
import { createServer, type Server } from 'node:net'
import { resolve } from 'node:path'
import { startStack, type TestStack } from '../../stack'
import { publishDomainEvent, stackQueues, type StackQueues } from './helpers/events'

const ROOT = resolve(__dirname, '../../..')

let stack: TestStack
let queues: StackQueues
let taken: Server

beforeAll(async () => {
  stack = await startStack('worker-start', { allowLoopbackWebhooks: true, workers: false })
  queues = stackQueues(stack)
  taken = createServer()
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r))
})
afterAll(async () => {
  await new Promise((r) => taken?.close(r))
  await queues?.close()
  await stack?.stop()
})

it('exits 1 on a taken port with the waiting jobs left waiting', async () => {
  const app = await stack.newApp()
  const published = await Promise.all(Array.from({ length: 40 }, () => publishDomainEvent(queues, { appDid: app.did })))
  expect(await queues.domainEvents.getWaitingCount()).toBe(40)

  const port = (taken.address() as { port: number }).port
  const env: NodeJS.ProcessEnv = { ...process.env, ...stack.workerEnv(), WORKERS_PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'fatal' }
  delete env.NODE_OPTIONS // jest's --experimental-vm-modules is not for the worker
  const child = spawn(resolve(ROOT, 'node_modules/.bin/tsx'), ['services/events/src/workers/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()))
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()))
  const code = await new Promise<number | null>((r) => child.once('close', (c) => r(c)))

  expect(code).toBe(1)
  // said as a log line like the process's others (it was printed as plain text)
  const lines = output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string; err?: { code?: string } })
  expect(lines.find((l) => l.msg === 'could not start')).toMatchObject({ level: 60, err: { code: 'EADDRINUSE' } })
  const jobs = await Promise.all(published.map(({ eventId }) => queues.domainEvents.getJob(eventId)))
  const states = await Promise.all(jobs.map(async (job) => `${await job!.getState()} ${job!.attemptsStarted ?? 0}`))
  expect(new Set(states)).toEqual(new Set(['waiting 0']))
  expect(await queues.deliveries.count()).toBe(0)
}, 60_000)
