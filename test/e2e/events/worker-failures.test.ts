/**
 * A job of the events workers that fails says so in the log, with the ids an operator searches by: a domain event
 * that could not become its delivery, and a reconcile run that failed midway. Both were silent (only the board had
 * the failed job). Real workers, BullMQ and Redis of the stack; the reconcile run's database read is made to fail.
 * And the reconciler's place in the failed domain events outlives its process.
 */
import { once } from 'node:events'
import Redis from 'ioredis'
import pino from 'pino'
import { Queue, Worker, type Job } from 'bullmq'
import { DOMAIN_EVENT_JOB_OPTIONS, DOMAIN_EVENTS_QUEUE, queuePrefix, type DomainEventJob } from '@svc/outbox'
import { WEBHOOK_DELIVERIES_QUEUE } from '@svc/events'
import { startReconciler } from '@svc/events/src/workers/reconciler'
import { startStack, type TestStack } from '../../stack'
import { publishDomainEvent, stackQueues, waitFor, type StackQueues } from './helpers/events'

const logs: string[] = []
let stack: TestStack
let queues: StackQueues

beforeAll(async () => {
  stack = await startStack('worker-failures', { logs })
  queues = stackQueues(stack)
})
afterAll(async () => {
  await queues?.close()
  await stack?.stop()
})

const lines = (of: string[]) => of.map((l) => JSON.parse(l) as Record<string, unknown>)

it('a domain event that cannot become a delivery is logged with its event id and job id', async () => {
  const app = await stack.newApp()
  const { eventId } = await publishDomainEvent(queues, { appDid: app.did, occurredAt: 'not a time' })
  const line = await waitFor(async () => lines(logs).find((l) => l.msg === 'domain event failed' && l.eventId === eventId), 'the failure to be logged')
  expect(line).toMatchObject({ level: 40, jobId: eventId, appDid: app.did, final: true, err: { message: `domain event ${eventId}: occurredAt is not a time` } })
})

it('a reconcile run that fails is logged with its job id', async () => {
  const captured: string[] = []
  const logger = pino({ level: 'info' }, { write: (line: string) => void captured.push(line) })
  const prefix = queuePrefix(`${stack.redisPrefix}reconcile-failure:`)
  const redis = new Redis(stack.redisUrl, { maxRetriesPerRequest: null })
  const deliveries = new Queue(WEBHOOK_DELIVERIES_QUEUE, { connection: redis, prefix })
  const domainEvents = new Queue(DOMAIN_EVENTS_QUEUE, { connection: redis, prefix })
  // the database goes away as the run reads the open deliveries
  const away = { find: () => ({ lean: () => Promise.reject(new Error('connection 3 to 127.0.0.1:27017 closed')) }) }
  const reconciler = startReconciler({ models: { ...stack.events, Delivery: away } as never, deliveries, domainEvents, processDomainEvent: () => Promise.reject(new Error('no failed domain event here')), endpoints: { lookup: async () => ({ kind: 'unavailable', error: 'not asked' }) }, redis, prefix, periodMs: 3_600_000, logger })
  try {
    const line = await waitFor(async () => lines(captured).find((l) => l.msg === 'reconcile run failed; the next period runs again'), 'the failed run to be logged')
    expect(line).toMatchObject({ level: 50, jobId: expect.stringMatching(/^reconcile-deliveries-start-/), err: { message: 'connection 3 to 127.0.0.1:27017 closed' } })
  } finally {
    await reconciler.stop()
    await Promise.all([deliveries.close(), domainEvents.close()])
    await redis.quit()
  }
})

it('runs slower than the period do not pile up: no run is added while one waits to start', async () => {
  const prefix = queuePrefix(`${stack.redisPrefix}reconcile-pileup:`)
  const redis = new Redis(stack.redisUrl, { maxRetriesPerRequest: null })
  const deliveries = new Queue(WEBHOOK_DELIVERIES_QUEUE, { connection: redis, prefix })
  const domainEvents = new Queue(DOMAIN_EVENTS_QUEUE, { connection: redis, prefix })
  const maintenance = new Queue('events-maintenance', { connection: redis, prefix })
  // each run reads the open deliveries for 300 ms (hundreds of thousands held), its period is 50 ms
  const slowFind = () => ({ lean: () => new Promise((resolve) => setTimeout(() => resolve([]), 300)) })
  const slow = new Proxy(stack.events.Delivery, { get: (model, key) => (key === 'find' ? slowFind : Reflect.get(model, key)) })
  const reconciler = startReconciler({ models: { ...stack.events, Delivery: slow } as never, deliveries, domainEvents, processDomainEvent: () => Promise.reject(new Error('no failed domain event here')), endpoints: { lookup: async () => ({ kind: 'unavailable', error: 'not asked' }) }, redis, prefix, periodMs: 50, logger: pino({ level: 'silent' }) })
  try {
    let mostWaiting = 0
    for (let i = 0; i < 40; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      mostWaiting = Math.max(mostWaiting, await maintenance.getWaitingCount())
    }
    // before: a run added every 50 ms and one done every 300 ms, about 35 waiting after 2 s
    expect(mostWaiting).toBeLessThanOrEqual(2)
    expect(await maintenance.getCompletedCount()).toBeGreaterThanOrEqual(3)
  } finally {
    await reconciler.stop()
    await Promise.all([deliveries.close(), domainEvents.close(), maintenance.close()])
    await redis.quit()
  }
})

it("the reconciler's place in the failed domain events is kept in Redis: the next run goes on from it in another process", async () => {
  const prefix = queuePrefix(`${stack.redisPrefix}reconcile-place:`)
  const redis = new Redis(stack.redisUrl, { maxRetriesPerRequest: null })
  const deliveries = new Queue(WEBHOOK_DELIVERIES_QUEUE, { connection: redis, prefix })
  const domainEvents = new Queue<DomainEventJob>(DOMAIN_EVENTS_QUEUE, { connection: redis, prefix })
  const maintenance = new Queue('events-maintenance', { connection: redis, prefix })
  const failing = new Worker<DomainEventJob>(DOMAIN_EVENTS_QUEUE, async () => { throw new Error('database away') }, { connection: redis.duplicate(), prefix })
  const tried: string[] = []
  const processDomainEvent = async (job: Job<DomainEventJob>) => {
    tried.push(job.data.eventId)
    if (job.data.eventId.startsWith('evt_poison')) throw new Error('never a delivery')
    return 'whd_recovered'
  }
  // a run that starts on its own when a reconciler starts, with runs of 2 failed events
  const run = async () => {
    const done = (await maintenance.getCompleted()).length
    const reconciler = startReconciler({ models: stack.events, deliveries, domainEvents, processDomainEvent, endpoints: { lookup: async () => ({ kind: 'unavailable', error: 'not asked' }) }, redis, prefix, periodMs: 3_600_000, logger: pino({ level: 'silent' }), domainEventsBatch: 2 })
    try {
      await waitFor(async () => (await maintenance.getCompleted()).length > done, 'the reconcile run')
    } finally {
      await reconciler.stop()
    }
  }
  try {
    // the oldest can become its delivery now, the two newer never (a run takes the newest first)
    for (const id of ['evt_recoverable', 'evt_poison_1', 'evt_poison_2']) {
      const failed = once(failing, 'failed')
      await domainEvents.add('payment.completed', { eventId: id } as DomainEventJob, { ...DOMAIN_EVENT_JOB_OPTIONS, attempts: 1, jobId: id })
      await failed
    }
    await failing.close()
    await run()
    expect(tried).toEqual(['evt_poison_2', 'evt_poison_1'])
    // another process (a restart): before, its place started again at the newest, and the oldest was never reached
    await run()
    expect(tried.slice(2)).toEqual(['evt_recoverable'])
    expect(await domainEvents.getJob('evt_recoverable')).toBeUndefined()
  } finally {
    await failing.close()
    await domainEvents.obliterate({ force: true })
    await maintenance.obliterate({ force: true })
    await Promise.all([deliveries.close(), domainEvents.close(), maintenance.close()])
    await redis.quit()
  }
})
