/**
 * The reconciler turns a failed `domain-events` job's event into its delivery itself, and removes the job only once
 * that is done: a failure (or a process that stops) in between leaves the failed job, tried again at the next run.
 */
import { once } from 'node:events'
import { Queue, Worker, type Job } from 'bullmq'
import Redis from 'ioredis'
import pino from 'pino'
import { isolate } from '@svc/testing/src/isolation'
import { DOMAIN_EVENT_JOB_OPTIONS, queuePrefix, type DomainEventJob } from '@svc/outbox'
import { retryFailedDomainEvents } from '../src/workers/domain-events'

const { redisUrl, redisPrefix } = isolate('domain-events-retry')
const silent = pino({ level: 'silent' })

let connection: Redis
let queue: Queue<DomainEventJob>
const QUEUE = 'domain-events-retry-test'

beforeAll(() => {
  connection = new Redis(redisUrl, { maxRetriesPerRequest: null })
  queue = new Queue<DomainEventJob>(QUEUE, { connection, prefix: queuePrefix(redisPrefix) })
})
afterAll(async () => {
  await queue.obliterate({ force: true })
  await queue.close()
  connection.disconnect()
})

/** A `domain-events` job that failed for good (its one try threw, as while the database was away). */
async function failedJob(eventId: string): Promise<DomainEventJob> {
  const data = { eventId, source: 'payments', type: 'payment.completed', environment: 'test', appDid: 'did:web:a.example.com', data: {}, occurredAt: new Date().toISOString() } as unknown as DomainEventJob
  const worker = new Worker<DomainEventJob>(QUEUE, async () => { throw new Error('database away') }, { connection: connection.duplicate(), prefix: queuePrefix(redisPrefix) })
  try {
    const failing = once(worker, 'failed')
    await queue.add('payment.completed', data, { ...DOMAIN_EVENT_JOB_OPTIONS, attempts: 1, jobId: eventId })
    await failing
  } finally {
    await worker.close()
  }
  return data
}

test('a failed event becomes its delivery, then its job goes', async () => {
  const data = await failedJob('evt_failed_once')
  const processed: DomainEventJob[] = []
  expect(await retryFailedDomainEvents(queue, async (job: Job<DomainEventJob>) => (processed.push(job.data), 'whd_x'), silent)).toEqual({ retried: 1, next: 0 })
  expect(processed).toEqual([data])
  expect(await queue.getJob('evt_failed_once')).toBeUndefined()
})

test('an event that still cannot become its delivery keeps its failed job, for the next run', async () => {
  const data = await failedJob('evt_failing')
  expect(await retryFailedDomainEvents(queue, () => Promise.reject(new Error('database away')), silent)).toEqual({ retried: 0, next: 0 })
  const job = (await queue.getJob('evt_failing'))!
  expect([await job.getState(), job.data]).toEqual(['failed', data])
  // the next run, the database back
  expect(await retryFailedDomainEvents(queue, async () => 'whd_y', silent)).toEqual({ retried: 1, next: 0 })
  expect(await queue.getJob('evt_failing')).toBeUndefined()
})

test('events that keep failing, more than a run takes, do not keep the ones behind them from their deliveries', async () => {
  // older ones that can become deliveries now, newer ones that never can (a run takes the newest first)
  for (const id of ['evt_recoverable_1', 'evt_recoverable_2', 'evt_poison_1', 'evt_poison_2', 'evt_poison_3']) await failedJob(id)
  const tried: string[] = []
  const processOne = async (job: Job<DomainEventJob>) => {
    tried.push(job.data.eventId)
    if (job.data.eventId.startsWith('evt_poison')) throw new Error('never a delivery')
    return 'whd_z'
  }
  // runs of 2, each from where the last one left off, until a lap ends
  let from = 0
  const runs: { retried: number; next: number }[] = []
  do {
    const run = await retryFailedDomainEvents(queue, processOne, silent, { from, batch: 2 })
    runs.push(run)
    from = run.next
  } while (from !== 0 && runs.length < 10)
  expect(runs.reduce((n, r) => n + r.retried, 0)).toBe(2)
  expect(runs.length).toBeLessThanOrEqual(3)
  expect(new Set(tried)).toEqual(new Set(['evt_recoverable_1', 'evt_recoverable_2', 'evt_poison_1', 'evt_poison_2', 'evt_poison_3']))
  // the recoverable ones' jobs are gone, the others stay failed for the next lap
  const left = await queue.getFailed(0, -1)
  expect(left.map((j) => j.id).sort()).toEqual(['evt_poison_1', 'evt_poison_2', 'evt_poison_3'])
  // (a run always from the start would only ever have tried the newest two)
  for (const j of left) await j.remove()
})
