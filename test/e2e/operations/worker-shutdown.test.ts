/**
 * The events workers' process (`tsx services/events/src/workers/main.ts`) as an operator runs it: its operations
 * routes on WORKERS_PORT (readiness, queue depth and delivery outcomes in its metrics), and a graceful stop: SIGTERM
 * while an attempt is in flight lets the attempt finish and be recorded, then the process exits 0.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { ensureSigningSecret } from '@svc/events'
import { freePort } from '@svc/testing'
import { startStack, type TestStack } from '../../stack'
import { bearer, httpRequest } from '../adapter/helpers'
import { configureChannel, waitFor, waitForStatus, writeEvent } from '../events/helpers/events'
import { startReceiver, type Receiver } from '../events/helpers/receiver'

const ROOT = resolve(__dirname, '../../..')

let stack: TestStack
let receiver: Receiver
let worker: ChildProcess | undefined

beforeAll(async () => {
  stack = await startStack('worker-shutdown', { allowLoopbackWebhooks: true, workers: false })
})
afterAll(async () => {
  if (worker && worker.exitCode === null) process.kill(-worker.pid!, 'SIGKILL')
  await stack?.stop()
  await receiver?.close()
})

it('serves readiness and metrics, and on SIGTERM finishes the attempt in flight before it exits 0', async () => {
  const app = await stack.newApp()
  await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app.did, 'test')
  const answering = { slowMs: 1500 }
  receiver = await startReceiver(async () => {
    await sleep(answering.slowMs)
    return { status: 200, body: { ok: true } }
  })
  await configureChannel(stack, app.did, { url: `${receiver.url}/events` })

  const port = await freePort()
  const env: NodeJS.ProcessEnv = { ...process.env, ...stack.workerEnv({ timeoutMs: 5000 }), WORKERS_PORT: String(port), METRICS_TOKEN: stack.secrets.metricsToken, SHUTDOWN_TIMEOUT_MS: '10000' }
  delete env.NODE_OPTIONS
  worker = spawn(resolve(ROOT, 'node_modules/.bin/tsx'), ['services/events/src/workers/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  let output = ''
  worker.stdout!.on('data', (c: Buffer) => (output += c.toString()))
  worker.stderr!.on('data', (c: Buffer) => (output += c.toString()))
  const exited = new Promise<number | null>((r) => worker!.once('exit', (code) => r(code)))
  const base = `http://127.0.0.1:${port}`

  try {
    await waitFor(async () => (await httpRequest(`${base}/readyz`).catch(() => null))?.status === 200, 'the worker process to be ready', 30_000)
  } catch (err) {
    throw new Error(`${(err as Error).message}\nworker output:\n${output}`)
  }
  expect((await httpRequest(`${base}/readyz`)).body).toEqual({ ok: true, checks: { 'database and redis': 'ok' } })

  // one delivery goes through while we watch the metrics
  const first = await writeEvent(stack, { appDid: app.did, type: 'payment.completed' })
  try {
    await waitForStatus(stack, first.deliveryId, 'delivered')
  } catch (err) {
    const d = await stack.events.Delivery.findById(first.deliveryId).lean()
    throw new Error(`${(err as Error).message}\n${JSON.stringify(d)}\nworker output:\n${output}`)
  }
  const delivered = /^svc_delivery_jobs_total\{[^}]*outcome="delivered"[^}]*\} [1-9]/m
  const metrics = async () => (await httpRequest(`${base}/metrics`, { headers: bearer(stack.secrets.metricsToken) })).text
  // the job is counted when it ends, a moment after its attempt wrote the delivery's status
  await waitFor(async () => delivered.test(await metrics()), 'the delivered job counted', 10_000)
  const text = await metrics()
  expect(text).toMatch(delivered)
  expect(text).toMatch(/^svc_queue_jobs\{[^}]*queue="webhook-deliveries"[^}]*state="waiting"[^}]*\} \d+/m)
  // the attempt's time, from the request to the receiver's answer
  const attempts = text.split('\n').filter((line) => line.startsWith('svc_delivery_attempt_duration_seconds_count{'))
  expect(attempts).toEqual([expect.stringMatching(/channel="webhook".*outcome="delivered".*\} 1$/)])
  expect((await httpRequest(`${base}/metrics`)).status).toBe(401)

  // SIGTERM while the second delivery's attempt waits for the receiver
  const second = await writeEvent(stack, { appDid: app.did, type: 'payment.completed' })
  await waitFor(async () => receiver.requests.length >= 2, 'the second attempt to reach the receiver', 20_000)
  process.kill(-worker.pid!, 'SIGTERM')
  // while it finishes that attempt it says it is not ready, so a balancer sends it nothing more
  await waitFor(async () => (await httpRequest(`${base}/readyz`).catch(() => null))?.status === 503, 'readiness to answer 503 while draining', 5000)
  const code = await exited
  expect({ code, output: code === 0 ? '' : output }).toEqual({ code: 0, output: '' })
  // the attempt finished and was recorded before the process exited: nothing is left for another worker
  const delivery = await stack.events.Delivery.findById(second.deliveryId).lean()
  expect(delivery).toMatchObject({ status: 'delivered', attemptCount: 1 })
  expect(receiver.requests).toHaveLength(2)
})
