/**
 * The reconciler's retry of a failed `domain-events` job is a new job under the same id: one that failed for
 * stalling (its workers died) starts again with no stall counted, and its data and options are the event's.
 */
import { once } from 'node:events'
import { Queue, Worker, type Job } from 'bullmq'
import Redis from 'ioredis'
import pino from 'pino'
import { isolate } from '@svc/testing/src/isolation'
import { DOMAIN_EVENT_JOB_OPTIONS, queuePrefix, type DomainEventJob } from '@svc/outbox'
import { retryFailedDomainEvents } from '../src/workers/domain-events'

const { redisUrl, redisPrefix } = isolate('domain-events-retry')

test('a failed job that had stalled 6 times is queued again with no stall counted', async () => {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null })
  const prefix = queuePrefix(redisPrefix)
  const queue = new Queue<DomainEventJob>('domain-events-retry-test', { connection, prefix })
  const worker = new Worker('domain-events-retry-test', async () => { throw new Error('database away') }, { connection: connection.duplicate(), prefix })
  const data = { eventId: 'evt_stalled', source: 'payments', type: 'payment.completed', environment: 'test', appDid: 'did:web:a.example.com', data: {}, occurredAt: new Date().toISOString() } as unknown as DomainEventJob
  try {
    const failing = once(worker, 'failed')
    await queue.add('payment.completed', data, { ...DOMAIN_EVENT_JOB_OPTIONS, attempts: 1, jobId: 'evt_stalled' })
    await failing
    await worker.close()
    const jobKey = `${prefix}:domain-events-retry-test:evt_stalled`
    await connection.hset(jobKey, 'stc', '6')

    expect(await retryFailedDomainEvents(queue, pino({ level: 'silent' }))).toBe(1)
    const job = (await queue.getJob('evt_stalled')) as Job<DomainEventJob>
    expect(await job.getState()).toBe('waiting')
    expect(Number((await connection.hget(jobKey, 'stc')) ?? 0)).toBe(0)
    expect(job.data).toEqual(data)
    expect(job.opts).toMatchObject({ attempts: DOMAIN_EVENT_JOB_OPTIONS.attempts, stackTraceLimit: 3 })
  } finally {
    await worker.close()
    await queue.obliterate({ force: true })
    await queue.close()
    connection.disconnect()
  }
})
