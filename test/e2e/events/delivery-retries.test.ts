/**
 * Failed attempts and the retry schedule, on real BullMQ with the schedule scaled down (1/50 000 unless a test
 * says otherwise): the whole 14-attempt run against a receiver that always fails, Retry-After within its cap,
 * timeouts, redirects, the connect-time address check, paused (held) deliveries and apps without a channel.
 */
import { QueueEvents } from 'bullmq'
import Redis from 'ioredis'
import {
  createDelivery,
  createEndpointClient,
  DELIVERY_JOB_OPTIONS,
  deliveryJob,
  ensureSigningSecret,
  HELD_TOO_LONG_ERROR,
  newDeliveryId,
  queuePrefix,
  releaseUnpausedHolds,
  requeueLostDelivery,
  scheduleSpanMs,
  startEventWorkers,
  WEBHOOK_DELIVERIES_QUEUE,
  type RunningEventWorkers,
} from '@svc/events'
import { startStack, type TestStack } from '../../stack'
import pino from 'pino'
import type { DeliverySettings } from '@svc/config'
import { startReceiver, type AnswerFn, type Receiver } from './helpers/receiver'
import { appWithReceiver as appWithNewReceiver, attemptsOf, configureChannel, getDelivery, queueTestDelivery, stackQueues, waitFor, waitForStatus, type StackQueues } from './helpers/events'

let stack: TestStack
let queues: StackQueues
let workers: RunningEventWorkers
const receivers: Receiver[] = []

beforeAll(async () => {
  stack = await startStack('delivery-retries', { allowLoopbackWebhooks: true, workers: false })
  queues = stackQueues(stack)
  workers = await stack.startWorkers()
})
afterAll(async () => {
  await queues?.close()
  await stack?.stop()
  await Promise.all(receivers.map((r) => r.close()))
})

/** Replaces the running workers with others for the length of `fn`. */
async function withWorkers<T>(start: () => Promise<RunningEventWorkers>, fn: () => Promise<T>): Promise<T> {
  await workers.stop()
  const special = await start()
  try {
    return await fn()
  } finally {
    await special.stop()
    workers = await stack.startWorkers()
  }
}

/** Workers of this stack with settings or a loopback policy of their own. */
function customWorkers(over: { delivery?: Partial<DeliverySettings>; allowLoopbackWebhooks?: boolean; gatewayUrl?: string }) {
  return startEventWorkers({
    mongoUrl: stack.mongoUrl,
    redisUrl: stack.redisUrl,
    redisPrefix: stack.redisPrefix,
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    gateway: { url: over.gatewayUrl ?? stack.gatewayUrl, key: stack.secrets.callerKeys.events },
    serviceDid: stack.serviceDid,
    serviceSigningKey: stack.secrets.serviceSigningKey,
    secretKey: stack.secrets.webhookSecretKey,
    delivery: { ...stack.delivery, ...over.delivery },
    allowLoopbackWebhooks: over.allowLoopbackWebhooks ?? true,
  })
}

/** A fresh app with a signing secret and its webhook pointing at a fresh receiver. */
const appWithReceiver = (answer: AnswerFn, url?: (r: Receiver) => string, paused = false) => appWithNewReceiver(stack, receivers, answer, { url, paused })

const requestsFor = (receiver: Receiver, id: string) => receiver.requests.filter((r) => r.headers['webhook-id'] === id)

/** The waits the delivery jobs are put back with (BullMQ's `delayed` events), per job: how long each waits from then. */
async function watchDelays() {
  const connection = new Redis(stack.redisUrl, { maxRetriesPerRequest: null })
  const events = new QueueEvents(WEBHOOK_DELIVERIES_QUEUE, { connection, prefix: queuePrefix(stack.redisPrefix) })
  const waits = new Map<string, number[]>()
  events.on('delayed', ({ jobId, delay }) => waits.set(jobId, [...(waits.get(jobId) ?? []), Number(delay) - Date.now()]))
  await events.waitUntilReady()
  return {
    waitsOf: (jobId: string) => waits.get(jobId) ?? [],
    close: async () => {
      await events.close()
      await connection.quit()
    },
  }
}

describe('retries', () => {
  it('runs the whole 14-attempt schedule against a receiver that always fails, then the delivery is failed', async () => {
    const answerBody = `boom ${'x'.repeat(700)}`
    const { app, receiver } = await appWithReceiver(() => ({ status: 500, body: answerBody }))
    const started = Date.now()
    const id = await queueTestDelivery(stack, queues, app.did)
    const failed = await waitForStatus(stack, id, 'failed', 40_000)
    const elapsed = Date.now() - started
    console.info(`14-attempt run at scale ${stack.delivery.scheduleScale}: ${elapsed} ms (schedule without jitter: ${Math.round(scheduleSpanMs(stack.delivery.scheduleScale))} ms)`)

    expect(failed.attemptCount).toBe(14)
    expect(failed.failedAt).toBeInstanceOf(Date)
    expect(failed.nextAttemptAt).toBeNull()
    expect(failed.lastStatusCode).toBe(500)
    expect(failed.lastError).toBe('HTTP 500')

    const attempts = await attemptsOf(stack, id)
    expect(attempts.map((a) => a.number)).toEqual(Array.from({ length: 14 }, (_, i) => i + 1))
    for (const [i, a] of attempts.entries()) {
      expect(a).toMatchObject({ outcome: 'failed', statusCode: 500, error: 'HTTP 500', channel: 'webhook', run: 1 })
      expect(a.durationMs).toEqual(expect.any(Number))
      expect(a.responseExcerpt).toBe(answerBody.slice(0, 500))
      if (i < 13) expect(a.nextAttemptAt).toBeInstanceOf(Date)
      else expect(a.nextAttemptAt).toBeNull()
      // each retry waited for its nextAttemptAt
      if (i > 0) expect(a.attemptedAt.getTime()).toBeGreaterThanOrEqual(attempts[i - 1]!.nextAttemptAt!.getTime() - 5)
    }
    // the run took about the scaled schedule (±10 % jitter)
    expect(elapsed).toBeGreaterThanOrEqual(0.9 * scheduleSpanMs(stack.delivery.scheduleScale))

    const seen = requestsFor(receiver, id)
    expect(seen).toHaveLength(14)
    expect(receiver.requests).toHaveLength(14)
    expect(new Set(seen.map((r) => r.headers['svc-delivery-id'])).size).toBe(1)
    expect(new Set(seen.map((r) => r.body))).toEqual(new Set([failed.body]))
    expect(await queues.deliveries.getJobState(id)).toBe('failed')
    // the board shows the same story in the job's log, one line per attempt
    const { logs } = await queues.deliveries.getJobLogs(id)
    expect(logs).toHaveLength(14)
    for (const [i, line] of logs.entries()) expect(line).toMatch(new RegExp(`^attempt ${i + 1} \\(webhook\\): HTTP 500 after \\d+ ms; `))
    expect(logs[0]).toMatch(/; next attempt at \d{4}-\d\d-\d\dT/)
    expect(logs[13]).toMatch(/; no attempts left in this run: failed, waiting for a redrive$/)
  })

  it('honours Retry-After (seconds or an HTTP date), but never beyond the next step of the schedule', async () => {
    // At 1/100 of real time: after attempt 1 the schedule waits 5 s ±10 % → 45–55 ms, after attempt 2 30 s → 270–330 ms.
    const { app, receiver } = await appWithReceiver((_req, i) =>
      i === 0
        ? { status: 503, body: 'busy', headers: { 'retry-after': '20' } } // 20 s → 200 ms (under the 30 s cap)
        : i === 1
          ? { status: 503, body: 'busy', headers: { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() } } // 1 h → capped at 2 min → 1200 ms
          : { status: 200, body: 'ok' },
    )
    await withWorkers(
      () => customWorkers({ delivery: { scheduleScale: 1 / 100 } }),
      async () => {
        const id = await queueTestDelivery(stack, queues, app.did)
        await waitForStatus(stack, id, 'delivered')
        const [a1, a2, a3] = await attemptsOf(stack, id)
        expect(a1).toMatchObject({ outcome: 'failed', statusCode: 503, error: 'HTTP 503', responseExcerpt: 'busy' })
        expect(a2).toMatchObject({ outcome: 'failed', statusCode: 503 })
        expect(a3).toMatchObject({ outcome: 'delivered', statusCode: 200 })
        // the wait each attempt set, from the end of its request (so a slow machine does not count)
        const waitOf = (a: NonNullable<typeof a1>) => a.nextAttemptAt!.getTime() - (a.attemptedAt.getTime() + (a.durationMs ?? 0))
        console.info(`Retry-After waits at scale 1/100: ${waitOf(a1!)} ms (asked 20 s), ${waitOf(a2!)} ms (asked 1 h, capped at 2 min)`)
        expect(waitOf(a1!)).toBeGreaterThanOrEqual(200 - 5)
        // capped: the hour asked would be 36 s at this scale
        expect(waitOf(a2!)).toBeGreaterThanOrEqual(1200 - 5)
        expect(waitOf(a2!)).toBeLessThan(5000)
        expect(a2!.attemptedAt.getTime()).toBeGreaterThanOrEqual(a1!.nextAttemptAt!.getTime() - 5)
        expect(a3!.attemptedAt.getTime()).toBeGreaterThanOrEqual(a2!.nextAttemptAt!.getTime() - 5)
        expect(requestsFor(receiver, id)).toHaveLength(3)
      },
    )
  })

  it('records a receiver that answers after the timeout as a timeout, and a redirect as a failure without following it', async () => {
    const { timeoutMs } = stack.delivery
    const { app, receiver } = await appWithReceiver((_req, i) =>
      i === 0 ? { status: 200, body: 'too late', delayMs: timeoutMs + 700 } : i === 1 ? { status: 302, headers: { location: '/elsewhere' } } : { status: 204 },
    )
    const id = await queueTestDelivery(stack, queues, app.did)
    await waitForStatus(stack, id, 'delivered')
    const [a1, a2, a3] = await attemptsOf(stack, id)
    expect(a1).toMatchObject({ outcome: 'failed', statusCode: null, error: `timeout: no answer within ${timeoutMs} ms`, responseExcerpt: null })
    // cut at the timeout (the error says so); the answer came 700 ms after it
    expect(a1!.durationMs).toBeGreaterThanOrEqual(timeoutMs - 50)
    expect(a2).toMatchObject({ outcome: 'failed', statusCode: 302, error: 'HTTP 302 (redirects are not followed)' })
    expect(a3).toMatchObject({ outcome: 'delivered', statusCode: 204, responseExcerpt: null })
    expect(receiver.requests.map((r) => r.path)).toEqual(['/hook', '/hook', '/hook'])
  })

  it('refuses loopback and private addresses at connect time when loopback receivers are not allowed', async () => {
    const literal = await appWithReceiver(() => ({ status: 200 }))
    const named = await appWithReceiver(() => ({ status: 200 }), (r) => r.url.replace('127.0.0.1', 'localhost'))
    const privateApp = await stack.newApp()
    await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, privateApp.did, 'test')
    await configureChannel(stack, privateApp.did, { url: 'http://10.0.0.7:8080/hook' })
    await withWorkers(
      () => customWorkers({ allowLoopbackWebhooks: false }),
      async () => {
        const ids = {
          literal: await queueTestDelivery(stack, queues, literal.app.did),
          named: await queueTestDelivery(stack, queues, named.app.did),
          private: await queueTestDelivery(stack, queues, privateApp.did),
        }
        for (const id of Object.values(ids)) {
          await waitFor(async () => (await attemptsOf(stack, id)).filter((a) => a.outcome === 'failed').length >= 2, `two refused attempts of ${id}`)
        }
        const first = async (id: string) => (await attemptsOf(stack, id))[0]!
        expect(await first(ids.literal)).toMatchObject({
          outcome: 'failed',
          statusCode: null,
          error: 'refused to connect: 127.0.0.1 is not a public address (loopback receivers need DEV_ALLOW_LOOPBACK_WEBHOOKS in test)',
        })
        // a name is checked on the address it resolves to when connecting (DNS rebinding cannot reach inside)
        expect((await first(ids.named)).error).toMatch(/^refused to connect: localhost \((127\.0\.0\.1|::1)\) is not a public address/)
        expect((await first(ids.private)).error).toMatch(/^refused to connect: 10\.0\.0\.7 is not a public address/)
        expect(literal.receiver.requests).toHaveLength(0)
        expect(named.receiver.requests).toHaveLength(0)
        expect((await getDelivery(stack, ids.literal))!.status).toMatch(/pending|failed/)
      },
    )
  })

  it('never connects to loopback in live, even with the development setting', async () => {
    const receiver = await startReceiver(() => ({ status: 200 }))
    receivers.push(receiver)
    const app = await stack.newApp({ environments: ['live'] })
    await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app.did, 'live')
    await configureChannel(stack, app.did, { url: `${receiver.url}/hook` }, 'live')
    const id = await queueTestDelivery(stack, queues, app.did, 'live')
    const [first] = await waitFor(async () => {
      const attempts = await attemptsOf(stack, id)
      return attempts[0]?.outcome === 'failed' ? attempts : null
    }, 'the live attempt to be refused')
    expect(first).toMatchObject({ statusCode: null, error: 'refused to connect: 127.0.0.1 is not a public address' })
    expect(receiver.requests).toHaveLength(0)
  })

  it('counts an attempt whose endpoint lookup found the gateway down as failed, and retries it', async () => {
    const { app, receiver } = await appWithReceiver(() => ({ status: 200 }))
    const closed = await startReceiver()
    const deadGateway = `${closed.url}/graphql`
    await closed.close()
    const id = await withWorkers(
      () => customWorkers({ gatewayUrl: deadGateway }),
      async () => {
        const queued = await queueTestDelivery(stack, queues, app.did)
        await waitFor(async () => (await attemptsOf(stack, queued)).filter((a) => a.outcome === 'failed').length >= 2, 'two attempts without the gateway')
        return queued
      },
    )
    // the regular workers (gateway up) deliver it
    const delivered = await waitForStatus(stack, id, 'delivered')
    const attempts = await attemptsOf(stack, id)
    expect(attempts[0]).toMatchObject({ outcome: 'failed', channel: null, statusCode: null, error: "could not read the app's event endpoint: the gateway is unavailable (ECONNREFUSED)" })
    expect(attempts.at(-1)).toMatchObject({ outcome: 'delivered', number: delivered.attemptCount })
    expect(requestsFor(receiver, id)).toHaveLength(1)
  })

  it('a job that names an attempt in flight (its worker died): the next pick-up logs that attempt interrupted and sends the next number', async () => {
    const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }))
    const id = newDeliveryId()
    const delivery = await createDelivery(stack.deliveryLog, {
      id,
      appDid: app.did,
      environment: 'test',
      eventId: null,
      eventType: 'app.webhook.test',
      source: 'test',
      createdAt: new Date(),
      data: { test: true },
    })
    // what the dead worker left: attempt 1 named in the job, nothing in the delivery's log, its attemptCount still 0
    const sentAt = new Date(Date.now() - 60_000)
    const inFlight = { number: 1, attemptedAt: sentAt.toISOString(), channel: 'webhook' as const, url: `${receiver.url}/hook` }
    await queues.deliveries.add('deliver', { ...deliveryJob(delivery), inFlight }, { ...DELIVERY_JOB_OPTIONS, jobId: id })
    const delivered = await waitForStatus(stack, id, 'delivered')
    expect(delivered.attemptCount).toBe(2)
    const attempts = await attemptsOf(stack, id)
    expect(attempts.map((a) => [a.number, a.outcome, a.error, a.statusCode])).toEqual([
      [1, 'interrupted', 'the worker stopped during this attempt', null],
      [2, 'delivered', null, 200],
    ])
    expect(attempts[0]).toMatchObject({ attemptedAt: sentAt, channel: 'webhook', url: `${receiver.url}/hook`, run: 1 })
    expect(requestsFor(receiver, id)).toHaveLength(1)
  })

  it("an attempt a dead worker left counts as one of the run's 14: against a receiver that always fails, 13 more, then failed", async () => {
    const { app, receiver } = await appWithReceiver(() => ({ status: 500, body: 'boom' }))
    const id = newDeliveryId()
    const delivery = await createDelivery(stack.deliveryLog, {
      id, appDid: app.did, environment: 'test', eventId: null, eventType: 'app.webhook.test', source: 'test', createdAt: new Date(), data: { test: true },
    })
    // attempt 1 was sent by a worker that died (BullMQ counts no attempt for it)
    const inFlight = { number: 1, attemptedAt: new Date().toISOString(), channel: 'webhook' as const, url: `${receiver.url}/hook` }
    const failed = await withWorkers(
      // a long lock: on a loaded machine a 1 s lock can lapse mid-attempt, which would add interrupted attempts of its own
      () => customWorkers({ delivery: { lockMs: 30_000 } }),
      async () => {
        await queues.deliveries.add('deliver', { ...deliveryJob(delivery), inFlight }, { ...DELIVERY_JOB_OPTIONS, jobId: id })
        return waitForStatus(stack, id, 'failed', 40_000)
      },
    )
    expect(failed.attemptCount).toBe(14)
    const attempts = await attemptsOf(stack, id)
    expect(attempts.map((a) => [a.number, a.outcome])).toEqual([[1, 'interrupted'], ...Array.from({ length: 13 }, (_, i) => [i + 2, 'failed'])])
    expect(attempts.at(-1)!.nextAttemptAt).toBeNull()
    expect(requestsFor(receiver, id)).toHaveLength(13)
    // the job ended with the run, not with BullMQ's own count (it had one attempt left)
    const job = (await queues.deliveries.getJob(id))!
    expect([await job.getState(), job.attemptsMade]).toEqual(['failed', 13])
  })

  it('a 14th attempt a dead worker left ends the run: no 15th is sent', async () => {
    const { app, receiver } = await appWithReceiver(() => ({ status: 500, body: 'boom' }))
    const { id, delivery } = await deliveryAhead(app.did, 13)
    const inFlight = { number: 14, attemptedAt: new Date().toISOString(), channel: 'webhook' as const, url: `${receiver.url}/hook` }
    await queues.deliveries.add('deliver', { ...deliveryJob(delivery), next: 14, firstOfRun: 1, inFlight }, { ...DELIVERY_JOB_OPTIONS, jobId: id })
    const failed = await waitForStatus(stack, id, 'failed')
    expect(failed.attemptCount).toBe(14)
    expect((await attemptsOf(stack, id)).map((a) => [a.number, a.outcome]).slice(-2)).toEqual([[13, 'failed'], [14, 'interrupted']])
    expect(requestsFor(receiver, id)).toHaveLength(0)
    await waitFor(async () => (await queues.deliveries.getJob(id))?.finishedOn !== undefined, 'the job to end')
    expect(await (await queues.deliveries.getJob(id))!.getState()).toBe('failed')
  })

  it('a held delivery whose 14th attempt was logged interrupted, queued again after Redis lost its job: the run ends unsent', async () => {
    const { app, receiver } = await appWithReceiver(() => ({ status: 500, body: 'boom' }))
    const { id } = await deliveryAhead(app.did, 13)
    const at = new Date()
    await stack.events.Delivery.updateOne({ _id: id }, {
      $set: { status: 'held', attemptCount: 14 },
      $push: { attempts: { number: 14, run: 1, channel: 'webhook', url: null, attemptedAt: at, durationMs: null, statusCode: null, outcome: 'interrupted', error: 'the worker stopped during this attempt', responseExcerpt: null, nextAttemptAt: null } },
    })
    expect(await requeueLostDelivery(stack.events, queues.deliveries, id, new Date())).toBe(true)
    const failed = await waitForStatus(stack, id, 'failed')
    expect(failed.attemptCount).toBe(14)
    expect(requestsFor(receiver, id)).toHaveLength(0)
  })

  it('a job whose worker died after the outcome was written: the next pick-up sends nothing again', async () => {
    const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }))
    const id = newDeliveryId()
    const delivery = await createDelivery(stack.deliveryLog, {
      id, appDid: app.did, environment: 'test', eventId: null, eventType: 'app.webhook.test', source: 'test', createdAt: new Date(), data: { test: true },
    })
    // the outcome is in the delivery; the job still names the attempt (the worker died before BullMQ completed it)
    const attemptedAt = new Date()
    await stack.events.Delivery.updateOne({ _id: id }, {
      $set: { status: 'delivered', attemptCount: 1, deliveredAt: attemptedAt, lastAttemptAt: attemptedAt },
      $push: { attempts: { number: 1, run: 1, channel: 'webhook', url: null, attemptedAt, durationMs: 2, statusCode: 200, outcome: 'delivered', error: null, responseExcerpt: 'ok', nextAttemptAt: null } },
    })
    const inFlight = { number: 1, attemptedAt: attemptedAt.toISOString(), channel: 'webhook' as const, url: null }
    await queues.deliveries.add('deliver', { ...deliveryJob(delivery), inFlight }, { ...DELIVERY_JOB_OPTIONS, jobId: id })
    await waitFor(async () => (await queues.deliveries.getJob(id))?.returnvalue === 'already-delivered', 'the job to complete as already delivered')
    expect((await attemptsOf(stack, id)).map((a) => a.outcome)).toEqual(['delivered'])
    expect(requestsFor(receiver, id)).toHaveLength(0)
  })

  /** A delivery whose log already holds `failed` attempts 1..n, counted, with the job's data of before them. */
  async function deliveryAhead(appDid: string, n: number, extra: Record<string, unknown> = {}) {
    const id = newDeliveryId()
    const delivery = await createDelivery(stack.deliveryLog, {
      id, appDid, environment: 'test', eventId: null, eventType: 'app.webhook.test', source: 'test', createdAt: new Date(), data: { test: true },
    })
    const at = new Date()
    const failed = (number: number) => ({ number, run: 1, channel: 'webhook', url: null, attemptedAt: at, durationMs: 2, statusCode: 500, outcome: 'failed', error: 'HTTP 500', responseExcerpt: null, nextAttemptAt: at })
    await stack.events.Delivery.updateOne({ _id: id }, {
      $set: { status: 'pending', attemptCount: n, lastAttemptAt: at, nextAttemptAt: at, ...extra },
      $push: { attempts: { $each: Array.from({ length: n }, (_, i) => failed(i + 1)) } },
    })
    return { id, delivery }
  }

  it('a job behind its delivery (Redis lost it while its worker still sent): the attempt is numbered after the counted ones, never twice', async () => {
    const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }))
    const { id, delivery } = await deliveryAhead(app.did, 3)
    // the job re-created from the delivery as it was before those three attempts were written: its next is 1
    await queues.deliveries.add('deliver', deliveryJob(delivery), { ...DELIVERY_JOB_OPTIONS, jobId: id })
    const delivered = await waitForStatus(stack, id, 'delivered')
    expect(delivered.attemptCount).toBe(4)
    expect((await attemptsOf(stack, id)).map((a) => [a.number, a.outcome])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'failed'],
      [4, 'delivered'],
    ])
    expect(requestsFor(receiver, id)).toHaveLength(1)
  })

  it('a job behind its delivery, failing: the next attempts continue from the delivery\'s count', async () => {
    let answered = 0
    const { app, receiver } = await appWithReceiver(() => (++answered <= 2 ? { status: 503, body: 'busy' } : { status: 200, body: 'ok' }))
    const { id, delivery } = await deliveryAhead(app.did, 2)
    await queues.deliveries.add('deliver', deliveryJob(delivery), { ...DELIVERY_JOB_OPTIONS, jobId: id })
    const delivered = await waitForStatus(stack, id, 'delivered')
    expect(delivered.attemptCount).toBe(5)
    expect((await attemptsOf(stack, id)).map((a) => [a.number, a.outcome, a.statusCode])).toEqual([
      [1, 'failed', 500],
      [2, 'failed', 500],
      [3, 'failed', 503],
      [4, 'failed', 503],
      [5, 'delivered', 200],
    ])
    expect(requestsFor(receiver, id)).toHaveLength(3)
  })

  it('a job behind its delivery, paused: held without logging again the attempts its delivery already counted', async () => {
    const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }), undefined, true)
    const { id, delivery } = await deliveryAhead(app.did, 3)
    // the job still names attempt 2 as interrupted and attempt 3 as its next: data of before those were written
    const interrupted = [{ number: 2, attemptedAt: new Date().toISOString(), channel: 'webhook' as const, url: null }]
    await queues.deliveries.add('deliver', { ...deliveryJob(delivery), next: 3, interrupted }, { ...DELIVERY_JOB_OPTIONS, jobId: id })
    const held = await waitForStatus(stack, id, 'held')
    expect(held.attemptCount).toBe(3)
    expect((await attemptsOf(stack, id)).map((a) => [a.number, a.outcome])).toEqual([
      [1, 'failed'],
      [2, 'failed'],
      [3, 'failed'],
    ])
    expect(receiver.requests).toHaveLength(0)

    await configureChannel(stack, app.did, { url: `${receiver.url}/hook`, paused: false })
    const delivered = await waitForStatus(stack, id, 'delivered')
    expect(delivered.attemptCount).toBe(4)
    expect((await attemptsOf(stack, id)).map((a) => a.number)).toEqual([1, 2, 3, 4])
  })

  it('a job behind a delivery that another worker delivered: the late attempt changes nothing in the delivery', async () => {
    const { app, receiver } = await appWithReceiver(() => ({ status: 500, body: 'down' }))
    const { id, delivery } = await deliveryAhead(app.did, 1, { status: 'delivered', deliveredAt: new Date() })
    await queues.deliveries.add('deliver', deliveryJob(delivery), { ...DELIVERY_JOB_OPTIONS, jobId: id })
    await waitFor(async () => (await queues.deliveries.getJob(id))?.returnvalue === 'already-delivered', 'the job to complete as already delivered')
    const after = await getDelivery(stack, id)
    expect(after).toMatchObject({ status: 'delivered', attemptCount: 1 })
    expect((await attemptsOf(stack, id)).map((a) => a.number)).toEqual([1])
    expect(requestsFor(receiver, id)).toHaveLength(1)
  })

  it('with DELIVERY_APP_CACHE_MS, an app environment\'s endpoint is read once per period: a pause reaches deliveries when it ends', async () => {
    const appCacheMs = 5000
    await withWorkers(() => customWorkers({ delivery: { appCacheMs } }), async () => {
      const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }))
      const first = await waitForStatus(stack, await queueTestDelivery(stack, queues, app.did), 'delivered')
      // paused in the apps database: the workers still hold the endpoint they read for the first delivery
      await configureChannel(stack, app.did, { url: `${receiver.url}/hook`, paused: true })
      const second = await queueTestDelivery(stack, queues, app.did)
      expect((await waitForStatus(stack, second, ['delivered', 'held'])).status).toBe('delivered')
      // the endpoint was read before the first attempt: once its period is over, the pause holds the next delivery
      await new Promise((r) => setTimeout(r, first.lastAttemptAt!.getTime() + appCacheMs + 50 - Date.now()))
      const third = await queueTestDelivery(stack, queues, app.did)
      expect((await waitForStatus(stack, third, 'held')).attemptCount).toBe(0)
      expect(requestsFor(receiver, third)).toHaveLength(0)
    })
  })

  it('holds a delivery while the webhook is paused (no attempt, nothing sent), re-checking less and less often without rewriting it, and sends it once unpaused', async () => {
    const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }), undefined, true)
    const rechecks = await watchDelays()
    try {
      const id = await queueTestDelivery(stack, queues, app.did)
      const held = await waitForStatus(stack, id, 'held')
      // the hold and the re-checks after it: each waits twice as long as the one before (200, 400, 800, 1600 ms)
      const waits = await waitFor(async () => {
        const w = rechecks.waitsOf(id)
        return w.length >= 4 && w
      }, 'the hold and three re-checks')
      // (each as the event reached this test: a loaded machine makes them look shorter, never longer)
      expect(waits[0]).toBeLessThanOrEqual(stack.delivery.holdRecheckMs)
      for (let i = 1; i < 4; i++) expect(waits[i]).toBeGreaterThan(1.5 * waits[i - 1]!)
      expect((await queues.deliveries.getJob(id))!.data.holds).toBeGreaterThanOrEqual(4)
      // written once, when it became held: its nextAttemptAt is the first re-check's, and no re-check wrote it again
      const still = (await getDelivery(stack, id))!
      expect(still).toMatchObject({ status: 'held', attemptCount: 0 })
      expect(still.updatedAt).toEqual(held.updatedAt)
      expect(still.nextAttemptAt).toEqual(held.nextAttemptAt)
      expect(await attemptsOf(stack, id)).toHaveLength(0)
      expect(receiver.requests).toHaveLength(0)

      await configureChannel(stack, app.did, { url: `${receiver.url}/hook`, paused: false })
      const delivered = await waitForStatus(stack, id, 'delivered')
      expect(delivered.attemptCount).toBe(1)
      const attempts = await attemptsOf(stack, id)
      expect(attempts).toHaveLength(1)
      expect(attempts[0]).toMatchObject({ number: 1, outcome: 'delivered', statusCode: 200 })
      expect(requestsFor(receiver, id)).toHaveLength(1)
    } finally {
      await rechecks.close()
    }
  })

  it('a delivery held longer than DELIVERY_HOLD_MAX_MS ends failed unsent (its job would otherwise stay in Redis for ever)', async () => {
    await withWorkers(() => customWorkers({ delivery: { holdMaxMs: 1000 } }), async () => {
      const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }), undefined, true)
      const id = await queueTestDelivery(stack, queues, app.did)
      const held = await waitForStatus(stack, id, 'held')
      const failed = await waitForStatus(stack, id, 'failed')
      expect(failed).toMatchObject({ attemptCount: 0, lastError: HELD_TOO_LONG_ERROR, nextAttemptAt: null })
      // at the first re-check past the limit (they double from 200 ms: 1.4 s, 3 s after the hold)
      expect(failed.failedAt!.getTime() - held.updatedAt!.getTime()).toBeGreaterThanOrEqual(1000)
      expect(await waitFor(async () => (await queues.deliveries.getJob(id))?.returnvalue === 'held-too-long', 'the job to complete as held too long')).toBe(true)
      expect(await attemptsOf(stack, id)).toHaveLength(0)
      expect(receiver.requests).toHaveLength(0)
    })
  })

  it('a held delivery whose re-check is far off is sent by the next reconcile run once its endpoint is unpaused; one still paused stays held', async () => {
    // every re-check an hour away: only the reconciler's release can send it soon
    await withWorkers(() => customWorkers({ delivery: { holdRecheckMs: 3_600_000 } }), async () => {
      const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }), undefined, true)
      const { app: other, receiver: otherReceiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }), undefined, true)
      const id = await queueTestDelivery(stack, queues, app.did)
      const paused = await queueTestDelivery(stack, queues, other.did)
      for (const held of [id, paused]) {
        await waitForStatus(stack, held, 'held')
        await waitFor(async () => (await (await queues.deliveries.getJob(held))?.getState()) === 'delayed', 'the held job to wait for its re-check')
      }
      await configureChannel(stack, app.did, { url: `${receiver.url}/hook`, paused: false })

      const endpoints = createEndpointClient({ url: stack.gatewayUrl, key: stack.secrets.callerKeys.events })
      try {
        const result = await releaseUnpausedHolds(stack.events, queues.deliveries, endpoints, pino({ level: 'silent' }))
        expect(result.environments).toBeGreaterThanOrEqual(2)
        expect(result.released).toBeGreaterThanOrEqual(1)
      } finally {
        await endpoints.close()
      }
      // well before its re-check, an hour away
      const delivered = await waitForStatus(stack, id, 'delivered', 30_000)
      expect(delivered.attemptCount).toBe(1)
      expect(requestsFor(receiver, id)).toHaveLength(1)
      // the other app's endpoint is still paused: its delivery waits for its re-check
      expect(await (await queues.deliveries.getJob(paused))!.getState()).toBe('delayed')
      expect(await getDelivery(stack, paused)).toMatchObject({ status: 'held', attemptCount: 0 })
      expect(requestsFor(otherReceiver, paused)).toHaveLength(0)
    })
  })

  it('the workers\' reconciler releases a held delivery once its endpoint is unpaused, however far off its re-check', async () => {
    const reconcileMs = 1000
    await withWorkers(() => customWorkers({ delivery: { holdRecheckMs: 3_600_000, reconcileMs } }), async () => {
      const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }), undefined, true)
      const id = await queueTestDelivery(stack, queues, app.did)
      await waitForStatus(stack, id, 'held')
      await waitFor(async () => (await (await queues.deliveries.getJob(id))?.getState()) === 'delayed', 'the held job to wait for its re-check')
      await configureChannel(stack, app.did, { url: `${receiver.url}/hook`, paused: false })
      // well before its re-check, an hour away
      await waitForStatus(stack, id, 'delivered', 30_000)
      expect(requestsFor(receiver, id)).toHaveLength(1)
    })
  })

  it('fails the attempts of an app without a channel ("no webhook or receiver configured"), through to failed', async () => {
    const unconfigured = await stack.newApp() // registered for test, no webhook URL
    const unregistered = `did:web:unregistered-${Date.now()}.example`
    const ids = [await queueTestDelivery(stack, queues, unconfigured.did), await queueTestDelivery(stack, queues, unregistered)]
    // a webhook URL but no signing secret: nothing unsigned ever leaves
    const unsigned = await startReceiver(() => ({ status: 200 }))
    receivers.push(unsigned)
    const noSecret = await stack.newApp()
    await configureChannel(stack, noSecret.did, { url: `${unsigned.url}/hook` })
    const noSecretId = await queueTestDelivery(stack, queues, noSecret.did)
    // every attempt of all three is finished once each delivery is failed (an attempt is logged before it is sent)
    const [a, b] = await Promise.all([...ids, noSecretId].map((id) => waitForStatus(stack, id, 'failed', 40_000)))
    expect(a!.attemptCount).toBe(14)
    expect(b!.attemptCount).toBe(14)
    const attemptsA = await attemptsOf(stack, ids[0]!)
    expect(attemptsA).toHaveLength(14)
    for (const attempt of attemptsA) expect(attempt).toMatchObject({ outcome: 'failed', error: 'no webhook or receiver configured', statusCode: null, url: null })
    const attemptsB = await attemptsOf(stack, ids[1]!)
    expect(attemptsB).toHaveLength(14)
    for (const attempt of attemptsB) expect(attempt).toMatchObject({ outcome: 'failed', error: 'no webhook or receiver configured (AppNotRegistered)', channel: null })
    const attemptsC = await attemptsOf(stack, noSecretId)
    expect(attemptsC).toHaveLength(14)
    for (const attempt of attemptsC) expect(attempt).toMatchObject({ outcome: 'failed', error: 'no signing secret for this app environment', statusCode: null })
    expect(unsigned.requests).toHaveLength(0)
  })
})
