/**
 * The database is the record of what is due (docs/events.md, "What is due"): open deliveries whose job Redis lost
 * are queued again by the workers' reconciler (at start, on reconnect, every DELIVERY_RECONCILE_MS), continuing
 * their run; a delivery whose job exists is not doubled, a settled one is left alone.
 */
import { Queue, Worker, type Job } from 'bullmq'
import type { DomainEventJob } from '@svc/outbox'
import Redis from 'ioredis'
import pino from 'pino'
import {
  createDelivery,
  createDomainEventProcessor,
  createTestDelivery,
  DELIVERY_JOB_OPTIONS,
  deliveryJob,
  ENDED_JOB_GRACE_MS,
  enqueueDelivery,
  EVENTS_MAINTENANCE_QUEUE,
  newDeliveryId,
  queuePrefix,
  RECONCILE_PROGRESS_EVERY,
  reconcileDeliveries,
  settleAbandonedJob,
  WEBHOOK_DELIVERIES_QUEUE,
  type DeliveryDoc,
  type DeliveryJob,
  type ReconcileProgress,
  type RunningEventWorkers,
} from '@svc/events'
import { startStack, type TestStack } from '../../stack'
import type { AnswerFn, Receiver } from './helpers/receiver'
import { appWithReceiver as appWithNewReceiver, attemptsOf, getDelivery, newEventId, publishDomainEvent, queueTestDelivery, stackQueues, waitFor, waitForStatus, type StackQueues } from './helpers/events'

let stack: TestStack
let queues: StackQueues
const receivers: Receiver[] = []
let workers: RunningEventWorkers | undefined

beforeAll(async () => {
  stack = await startStack('reconcile', { allowLoopbackWebhooks: true, workers: false })
  queues = stackQueues(stack)
})
afterAll(async () => {
  await workers?.stop()
  await queues?.close()
  await stack?.stop()
  await Promise.all(receivers.map((r) => r.close()))
})

const appWithReceiver = (answer: AnswerFn) => appWithNewReceiver(stack, receivers, answer)

const newDelivery = (appDid: string) =>
  createDelivery(stack.deliveryLog, { id: newDeliveryId(), appDid, environment: 'test', eventId: null, eventType: 'app.webhook.test', source: 'test', createdAt: new Date(), data: { test: true } })

const requestsFor = (receiver: Receiver, id: string) => receiver.requests.filter((r) => r.headers['webhook-id'] === id)

it('at start: open deliveries without a job are queued again (the run continues), one with a job is not doubled, a settled one stays', async () => {
  const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }))
  const neverSent = await newDelivery(app.did)
  // two attempts of run 1 failed; Redis lost the job before the third
  const retrying = await newDelivery(app.did)
  const failedAt = new Date(Date.now() - 60_000)
  const failedAttempt = (number: number) => ({ number, run: 1, channel: 'webhook', url: null, attemptedAt: failedAt, durationMs: 3, statusCode: 500, outcome: 'failed', error: 'HTTP 500', responseExcerpt: null, nextAttemptAt: failedAt })
  await stack.events.Delivery.updateOne({ _id: retrying._id }, { $set: { attemptCount: 2, lastAttemptAt: failedAt, nextAttemptAt: failedAt }, $push: { attempts: { $each: [failedAttempt(1), failedAttempt(2)] } } })
  const queued = await newDelivery(app.did)
  await enqueueDelivery(queues.deliveries, queued)
  const settled = await newDelivery(app.did)
  await stack.events.Delivery.updateOne({ _id: settled._id }, { $set: { status: 'delivered', attemptCount: 1, deliveredAt: new Date() } })

  workers = await stack.startWorkers()
  for (const d of [neverSent, retrying, queued]) await waitForStatus(stack, d._id, 'delivered')

  expect((await attemptsOf(stack, retrying._id)).map((a) => [a.number, a.run, a.outcome])).toEqual([[1, 1, 'failed'], [2, 1, 'failed'], [3, 1, 'delivered']])
  // the job took up the run where it stood: 12 attempts were left of its 14
  const job = await queues.deliveries.getJob(retrying._id)
  expect(job!.opts.attempts).toBe(12)
  expect(job!.data).toMatchObject({ next: 3, run: 1, attemptsBefore: 2 })
  for (const d of [neverSent, retrying, queued]) expect(requestsFor(receiver, d._id)).toHaveLength(1)
  expect(requestsFor(receiver, settled._id)).toHaveLength(0)
  expect((await getDelivery(stack, settled._id))!.attemptCount).toBe(1)

  // the run is on the maintenance queue, with its counts, for the operators' board
  const maintenance = new Queue(EVENTS_MAINTENANCE_QUEUE, { connection: stack.redis, prefix: queuePrefix(stack.redisPrefix) })
  try {
    const runs = await maintenance.getJobs(['completed'])
    expect(runs.map((r) => r.returnvalue)).toContainEqual({ checked: 3, requeued: 2, heldReleased: 0, domainEventsRetried: 0 })
    // and its progress, which a long run shows as it goes
    expect(runs.map((r) => r.progress)).toContainEqual({ found: 3, checked: 3, requeued: 2 })
  } finally {
    await maintenance.close()
  }
  await workers.stop()
  workers = undefined
})

it('Redis loses every job while deliveries wait for their retry: all are delivered once the receiver is back, none twice, the logs consistent', async () => {
  let up = false
  const { app, receiver } = await appWithReceiver(() => (up ? { status: 200, body: 'ok' } : { status: 503, body: 'down' }))
  // retries 5 ms, 30 ms, 120 ms, 600 ms, 1.8 s, … apart; a reconcile every 300 ms
  workers = await stack.startWorkers({ scheduleScale: 1 / 1000, reconcileMs: 300 })
  const ids = await Promise.all(Array.from({ length: 10 }, () => queueTestDelivery(stack, queues, app.did)))
  await waitFor(async () => {
    const docs = await Promise.all(ids.map((id) => getDelivery(stack, id)))
    return docs.every((d) => d!.status === 'pending' && d!.attemptCount >= 4)
  }, 'every delivery to have failed 4 attempts', 30_000)

  // what a Redis restart without persistence leaves: none of this stack's keys (jobs, locks, queues)
  const wipe = new Redis(stack.redisUrl)
  try {
    const keys = await wipe.keys(`${stack.redisPrefix}*`)
    if (keys.length > 0) await wipe.del(...keys)
  } finally {
    wipe.disconnect()
  }
  up = true

  const delivered = (await Promise.all(ids.map((id) => waitForStatus(stack, id, 'delivered', 30_000)))) as DeliveryDoc[]
  for (const d of delivered) {
    const attempts = await attemptsOf(stack, d._id)
    // every attempt logged once, numbered without gaps, only the last delivered; exactly one request was answered 200
    expect(attempts.map((a) => a.number)).toEqual(Array.from({ length: attempts.length }, (_, i) => i + 1))
    expect(attempts.filter((a) => a.outcome === 'delivered')).toHaveLength(1)
    expect(attempts.at(-1)!.outcome).toBe('delivered')
    expect(d.attemptCount).toBe(attempts.length)
    expect(requestsFor(receiver, d._id).length).toBeGreaterThanOrEqual(attempts.filter((a) => a.outcome !== 'interrupted').length)
  }
  await workers.stop()
  workers = undefined
})

it('a domain event whose job failed for good is retried by the reconciler until it becomes its delivery', async () => {
  const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }))
  // a job with a single try that fails (as one that stalled in dying workers too often has none left)
  const { deliveryId, job } = await publishDomainEvent(queues, { appDid: app.did, occurredAt: 'not a time' })
  const broken = (await queues.domainEvents.getJob(job.eventId))!
  workers = await stack.startWorkers({ reconcileMs: 300 })
  await waitFor(async () => (await queues.domainEvents.getJob(job.eventId))?.failedReason != null, 'the job to fail')
  expect(await getDelivery(stack, deliveryId)).toBeNull()

  // what made it fail passes (here: the data is mended); the reconciler's next run puts it back on the queue
  await broken.updateData({ ...job, occurredAt: new Date().toISOString() })
  await waitForStatus(stack, deliveryId, 'delivered')
  expect(requestsFor(receiver, deliveryId)).toHaveLength(1)
  expect(await queues.domainEvents.getFailedCount()).toBe(0)
  await workers.stop()
  workers = undefined
})

it('five reconcilers at once (five worker processes starting together) queue each lost delivery once: one job, one request, one attempt each', async () => {
  const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }))
  const lost = await Promise.all(Array.from({ length: 10 }, () => newDelivery(app.did)))
  const log = pino({ level: 'silent' })
  const runs = await Promise.all(Array.from({ length: 5 }, () => reconcileDeliveries(stack.events, queues.deliveries, log)))
  expect(runs.every((r) => r.checked >= lost.length)).toBe(true)
  for (const d of lost) expect(await queues.deliveries.getJob(d._id)).toMatchObject({ id: d._id, data: expect.objectContaining({ deliveryId: d._id }) })

  workers = await stack.startWorkers()
  for (const d of lost) await waitForStatus(stack, d._id, 'delivered')
  // a late reconcile finds nothing more to do for them
  await reconcileDeliveries(stack.events, queues.deliveries, log)
  await new Promise((resolve) => setTimeout(resolve, 300))
  for (const d of lost) {
    expect(requestsFor(receiver, d._id)).toHaveLength(1)
    expect((await attemptsOf(stack, d._id)).map((a) => a.outcome)).toEqual(['delivered'])
  }
  await workers.stop()
  workers = undefined
})

it('a job that failed for good while a worker whose lock had lapsed delivered its delivery leaves it delivered', async () => {
  const { app } = await appWithReceiver(() => ({ status: 200, body: 'ok' }))
  const open = await newDelivery(app.did)
  const job = { data: deliveryJob(open, 0) } as Job<DeliveryJob>
  // the other worker's outcome lands between the settle's read and its write
  const updateOne = stack.events.Delivery.updateOne.bind(stack.events.Delivery)
  const spy = jest.spyOn(stack.events.Delivery, 'updateOne').mockImplementationOnce((async (...args: unknown[]) => {
    await updateOne({ _id: open._id }, { $set: { status: 'delivered', attemptCount: 1, deliveredAt: new Date() } })
    return (updateOne as (...a: unknown[]) => Promise<unknown>)(...args)
  }) as never)
  try {
    await settleAbandonedJob(stack.events, job, 'job stalled more than allowable limit')
  } finally {
    spy.mockRestore()
  }
  expect(await getDelivery(stack, open._id)).toMatchObject({ status: 'delivered', attemptCount: 1 })
})

it('a run reports its progress every RECONCILE_PROGRESS_EVERY deliveries and at its end', async () => {
  const { app } = await appWithReceiver(() => ({ status: 200, body: 'ok' }))
  for (let i = 0; i < RECONCILE_PROGRESS_EVERY + 1; i++) await enqueueDelivery(queues.deliveries, await newDelivery(app.did))
  const seen: ReconcileProgress[] = []
  await reconcileDeliveries(stack.events, queues.deliveries, pino({ level: 'silent' }), new Date(), async (p) => void seen.push(p))
  expect(seen.length).toBeGreaterThanOrEqual(2)
  expect(seen[0]!.checked).toBe(RECONCILE_PROGRESS_EVERY)
  const last = seen.at(-1)!
  expect(last.checked).toBe(last.found)
  expect(last.found).toBeGreaterThanOrEqual(RECONCILE_PROGRESS_EVERY + 1)
})

it('a delivery left open by a job that failed for good (its outcome could not be written) is queued again once the grace is past', async () => {
  const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }))
  const open = await newDelivery(app.did)
  // its last try, picked up by a worker that failed outside the attempt and could not mark the delivery failed
  await queues.deliveries.add('deliver', deliveryJob(open, 0), { ...DELIVERY_JOB_OPTIONS, attempts: 1, jobId: open._id })
  const connection = new Redis(stack.redisUrl, { maxRetriesPerRequest: null })
  const failing = new Worker(
    WEBHOOK_DELIVERIES_QUEUE,
    async () => {
      throw new Error('the database cannot be reached')
    },
    { connection, prefix: queuePrefix(stack.redisPrefix) },
  )
  try {
    await waitFor(async () => (await queues.deliveries.getJob(open._id))?.finishedOn != null, 'the job to fail for good', 30_000)
  } finally {
    await failing.close()
    connection.disconnect()
  }
  expect(await (await queues.deliveries.getJob(open._id))!.getState()).toBe('failed')
  expect((await getDelivery(stack, open._id))!.status).toBe('pending')

  // within the grace the ended job still counts (its worker may be settling it) …
  const log = pino({ level: 'silent' })
  expect(await reconcileDeliveries(stack.events, queues.deliveries, log)).toMatchObject({ requeued: 0 })
  // also for a reconciler whose clock is 10 s ahead of the worker's
  expect(await reconcileDeliveries(stack.events, queues.deliveries, log, new Date(Date.now() + 10_000))).toMatchObject({ requeued: 0 })
  // … past it, the delivery's document decides: its job is added again and it is delivered
  expect(await reconcileDeliveries(stack.events, queues.deliveries, log, new Date(Date.now() + ENDED_JOB_GRACE_MS + 1000))).toMatchObject({ requeued: 1 })
  workers = await stack.startWorkers()
  await waitForStatus(stack, open._id, 'delivered')
  expect(requestsFor(receiver, open._id)).toHaveLength(1)
  await workers.stop()
  workers = undefined
})

it('a last attempt sent whose outcome could not be written is logged interrupted when its ended job is replaced, not sent again', async () => {
  const { app, receiver } = await appWithReceiver(() => ({ status: 200, body: 'ok' }))
  const open = await newDelivery(app.did)
  // 13 attempts logged; the 14th was sent, and its worker could write neither its outcome nor the job's failure
  const failedAttempts = Array.from({ length: 13 }, (_, i) => ({ number: i + 1, run: 1, attemptedAt: new Date(), outcome: 'failed', statusCode: 500, error: 'HTTP 500' }))
  await stack.events.Delivery.updateOne({ _id: open._id }, { $set: { attemptCount: 13, attempts: failedAttempts, nextAttemptAt: new Date() } })
  const inFlight = { number: 14, attemptedAt: new Date().toISOString(), channel: 'webhook' as const, url: receiver.url }
  await queues.deliveries.add('deliver', { ...deliveryJob(open, 13), next: 14, inFlight }, { ...DELIVERY_JOB_OPTIONS, attempts: 1, jobId: open._id })
  const connection = new Redis(stack.redisUrl, { maxRetriesPerRequest: null })
  const failing = new Worker(WEBHOOK_DELIVERIES_QUEUE, async () => { throw new Error('the database cannot be reached') }, { connection, prefix: queuePrefix(stack.redisPrefix) })
  try {
    await waitFor(async () => (await queues.deliveries.getJob(open._id))?.finishedOn != null, 'the job to fail for good', 30_000)
  } finally {
    await failing.close()
    connection.disconnect()
  }

  const log = pino({ level: 'silent' })
  expect(await reconcileDeliveries(stack.events, queues.deliveries, log, new Date(Date.now() + ENDED_JOB_GRACE_MS + 1000))).toMatchObject({ requeued: 1 })
  workers = await stack.startWorkers()
  const failed = await waitForStatus(stack, open._id, 'failed')
  // before: the new job sent the 14th attempt again (and logged only that one)
  expect(requestsFor(receiver, open._id)).toHaveLength(0)
  expect(failed.attemptCount).toBe(14)
  expect((await attemptsOf(stack, open._id)).at(-1)).toMatchObject({ number: 14, outcome: 'interrupted' })
  await workers.stop()
  workers = undefined
})

it('an event replayed after Redis lost its data queues an open delivery for the rest of its run, not a new schedule', async () => {
  // a queue of this test's own, which no worker takes from: the jobs the replay adds stay to be read
  const own = new Queue<DeliveryJob>(WEBHOOK_DELIVERIES_QUEUE, { connection: stack.redis, prefix: queuePrefix(`${stack.redisPrefix}replay:`) })
  try {
    const processEvent = createDomainEventProcessor({ ...stack.deliveryLog, deliveries: own, logger: pino({ level: 'silent' }) })
    const app = await stack.newApp()
    const job: DomainEventJob = { eventId: newEventId(), source: 'payments', type: 'payment.completed', environment: 'test', appDid: app.did, data: { amount: 1500 }, occurredAt: new Date().toISOString() }
    const id = await processEvent({ data: job } as Job<DomainEventJob>)
    // three attempts of run 1 failed, the next due in an hour; then Redis lost the job
    const failedAt = new Date(Date.now() - 60_000)
    const nextAttemptAt = new Date(Date.now() + 3_600_000)
    const failed = (number: number) => ({ number, run: 1, channel: 'webhook', url: null, attemptedAt: failedAt, durationMs: 3, statusCode: 500, outcome: 'failed', error: 'HTTP 500', responseExcerpt: null, nextAttemptAt })
    await stack.events.Delivery.updateOne({ _id: id }, { $set: { attemptCount: 3, lastAttemptAt: failedAt, nextAttemptAt }, $push: { attempts: { $each: [failed(1), failed(2), failed(3)] } } })
    await (await own.getJob(id))!.remove()

    await processEvent({ data: job } as Job<DomainEventJob>)
    const requeued = await own.getJob(id)
    expect(requeued!.opts.attempts).toBe(11)
    expect(requeued!.data).toMatchObject({ run: 1, next: 4, attemptsBefore: 3 })
    expect(requeued!.opts.delay).toBeGreaterThan(3_500_000)
  } finally {
    await own.obliterate({ force: true })
    await own.close()
  }
})

it('a test delivery whose queue add reached Redis but lost its answer leaves neither its job nor its log entry (the developer retries)', async () => {
  const own = new Queue<DeliveryJob>(WEBHOOK_DELIVERIES_QUEUE, { connection: stack.redis, prefix: queuePrefix(`${stack.redisPrefix}lost-answer:`) })
  try {
    const answerLost = new Proxy(own, {
      get: (target, prop, receiver) =>
        prop === 'add'
          ? async (...args: Parameters<typeof target.add>) => {
              await target.add(...args)
              throw new Error('connection reset')
            }
          : Reflect.get(target, prop, receiver),
    })
    const app = await stack.newApp()
    await expect(createTestDelivery({ ...stack.deliveryLog, deliveries: answerLost, logger: pino({ level: 'silent' }) }, app.did, 'test')).rejects.toThrow(/queue is unavailable/)
    expect(Object.values(await own.getJobCounts()).reduce((a, b) => a + b, 0)).toBe(0)
    expect(await stack.events.Delivery.countDocuments({ appDid: app.did })).toBe(0)
  } finally {
    await own.obliterate({ force: true })
    await own.close()
  }
})
