/**
 * Crash safety of a delivery (docs/events.md, "Crash safety"): the delivery worker runs as its own OS process
 * (`tsx services/events/src/workers/main.ts`); the receiver gets the request, processes it with the SDK's receiver
 * helper and a Redis claim store, and never answers; the worker is SIGKILLed. Once its job lock lapses, a new worker
 * takes the job over and sends the same delivery id again: the delivery ends delivered, the first attempt (named in
 * the job while it was in flight) is logged `interrupted`, and the app processed the event exactly once.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'
import { createRedisClaimStore, createWebhookRequestHandler, type EventEnvelope } from '@svc/sdk'
import { startStack, type TestStack } from '../../stack'
import { ensureSigningSecret } from '@svc/events'
import { startReceiver, type Receiver } from './helpers/receiver'
import { attemptsOf, configureChannel, stackQueues, waitFor, waitForStatus, writeEvent } from './helpers/events'

const ROOT = resolve(__dirname, '../../..')

let stack: TestStack
let receiver: Receiver
let worker: ChildProcess | undefined

beforeAll(async () => {
  stack = await startStack('worker-crash', { allowLoopbackWebhooks: true, workers: false })
})
afterAll(async () => {
  if (worker) killHard(worker)
  await stack?.stop()
  await receiver?.close()
})

/** SIGKILL to the worker's whole process group (the tsx launcher and the node process running the worker). */
function killHard(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL')
  } catch {
    // already gone
  }
}

/** Starts a worker process of this stack; its output is kept for the failure message. */
function spawnWorker(lockMs: number): { child: ChildProcess; output: () => string } {
  const env: NodeJS.ProcessEnv = { ...process.env, ...stack.workerEnv({ lockMs }) }
  delete env.NODE_OPTIONS // jest's --experimental-vm-modules is not for the worker
  // Its own process group: tsx runs the worker in a child node process, and a SIGKILL to the group kills both.
  const child = spawn(resolve(ROOT, 'node_modules/.bin/tsx'), ['services/events/src/workers/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let out = ''
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()))
  return { child, output: () => out }
}

it('a worker killed mid-attempt: another sends the same delivery again, the app processes it once', async () => {
  const app = await stack.newApp()
  const secret = (await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app.did, 'test')).secret!
  const processed: EventEnvelope[] = []
  const onWebhook = createWebhookRequestHandler({
    secret,
    store: createRedisClaimStore(stack.redis, { prefix: `${stack.redisPrefix}app-claims:` }),
    handlers: { 'payment.completed': async (e) => void processed.push(e) },
  })
  const answers: { status: number; body: unknown }[] = []
  receiver = await startReceiver(async (req, index) => {
    const res = await onWebhook({ rawBody: req.body, headers: req.headers })
    answers.push(res)
    // The first time the app does the work and then hangs before answering (the sender never learns it worked).
    return index === 0 ? 'hang' : { status: res.status, body: res.body as object }
  })
  // a query token in the URL, as some receivers take their credential
  await configureChannel(stack, app.did, { url: `${receiver.url}/events?token=s3cr3t` })

  const lockMs = 1000
  const spawned = spawnWorker(lockMs)
  worker = spawned.child
  // 'close': the launcher exited and every process holding its output pipes (the worker itself) is gone
  const closed = new Promise<NodeJS.Signals | number | null>((r) => worker!.once('close', (code, signal) => r(signal ?? code)))
  const { deliveryId } = await writeEvent(stack, { appDid: app.did, type: 'payment.completed' })

  try {
    await waitFor(async () => receiver.requests.length >= 1 && answers.length >= 1, 'the worker process to send the first attempt', 30_000)
  } catch (err) {
    throw new Error(`${(err as Error).message}\nworker output:\n${spawned.output()}`)
  }
  // in flight: named in the job (Redis), nothing in the delivery's log yet
  expect(await attemptsOf(stack, deliveryId)).toEqual([])
  const queues = stackQueues(stack)
  try {
    // the board shows job data: the URL without its query
    expect((await queues.deliveries.getJob(deliveryId))?.data.inFlight).toMatchObject({ number: 1, channel: 'webhook', url: `${receiver.url}/events` })
    expect(JSON.stringify((await queues.deliveries.getJob(deliveryId))?.data)).not.toContain('s3cr3t')
  } finally {
    await queues.close()
  }
  killHard(worker)
  expect(await closed).toBe('SIGKILL')
  const killedAt = Date.now()

  // A new worker (this process) picks the job up once the dead worker's lock lapses.
  await stack.startWorkers({ lockMs })
  const delivered = await waitForStatus(stack, deliveryId, 'delivered', 30_000)
  console.info(`taken over and delivered ${Date.now() - killedAt} ms after the SIGKILL (lock ${lockMs} ms)`)

  expect(delivered.attemptCount).toBe(2)
  const attempts = await attemptsOf(stack, deliveryId)
  expect(attempts.map((a) => [a.number, a.outcome])).toEqual([
    [1, 'interrupted'],
    [2, 'delivered'],
  ])
  expect(attempts[0]!.error).toBe('the worker stopped during this attempt')
  expect(attempts[0]!.statusCode).toBeNull()
  expect(attempts[1]).toMatchObject({ statusCode: 200, responseExcerpt: '{"ok":true,"duplicate":true}', url: `${receiver.url}/events?token=s3cr3t` })
  // the attempt in flight, as its job named it
  expect(attempts[0]!.url).toBe(`${receiver.url}/events`)
  // the interrupted attempt may have reached the receiver (it had): the 30 days of its id count from it
  expect(delivered.firstReachedAt).toEqual(attempts[0]!.attemptedAt)

  // The receiver got the same delivery twice, byte for byte; the app's handler ran once.
  expect(receiver.requests).toHaveLength(2)
  expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([deliveryId, deliveryId])
  expect(receiver.requests[1]!.body).toBe(receiver.requests[0]!.body)
  expect(receiver.requests[0]!.body).toBe(delivered.body)
  expect(processed.map((e) => e.id)).toEqual([deliveryId])
  expect(answers.map((a) => a.body)).toEqual([{ ok: true }, { ok: true, duplicate: true }])
})
