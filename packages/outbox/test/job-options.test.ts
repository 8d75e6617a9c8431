/**
 * A `domain-events` job that always fails is kept and retried by the events workers' reconciler for as long as it
 * fails: its stack traces stay at the last 3, however often it is retried (a retry does not clear them).
 */
import { once } from 'node:events'
import { Queue, Worker, type Job } from 'bullmq'
import Redis from 'ioredis'
import { isolate } from '@svc/testing/src/isolation'
import { DOMAIN_EVENT_JOB_OPTIONS, queuePrefix } from '../src'

const { redisUrl, redisPrefix } = isolate('job-options')

test('a failed domain-event job retried 8 times keeps 3 stack traces', async () => {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null })
  const prefix = queuePrefix(redisPrefix)
  const queue = new Queue('job-options-test', { connection, prefix })
  const worker = new Worker('job-options-test', async () => { throw new Error('occurredAt is not a time') }, { connection: connection.duplicate(), prefix })
  try {
    for (let run = 0; run < 8; run++) {
      const failing = once(worker, 'failed') // listened for before the job can run
      if (run === 0) await queue.add('event', {}, { ...DOMAIN_EVENT_JOB_OPTIONS, attempts: 1, jobId: 'evt_always_fails' })
      else await (await queue.getJob('evt_always_fails'))!.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true })
      const [failed] = (await failing) as [Job]
      expect(failed.id).toBe('evt_always_fails')
    }
    const job = (await queue.getJob('evt_always_fails'))!
    expect(job.stacktrace).toHaveLength(3)
  } finally {
    await worker.close()
    await queue.obliterate({ force: true })
    await queue.close()
    connection.disconnect()
  }
})
