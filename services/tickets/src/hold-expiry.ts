/**
 * The `ticket-holds` queue: one delayed job per hold, job id = hold id, due at the hold's `expiresAt`; the tickets
 * process's worker runs expireHold (domain/expire-hold.ts). What is due is the hold's `expiresAt` in the database:
 * the job only makes the release punctual, so adding it is best effort (a hold is made without it when Redis is
 * away), and reads release lapsed holds anyway. Operators see the jobs on the board.
 */
import { Worker, type Job } from 'bullmq'
import Redis from 'ioredis'
import type { Logger } from 'pino'
import { producerQueue, queuePrefix, TICKET_HOLDS_QUEUE } from '@svc/outbox'
import { logConnectionErrors, REQUEST_REDIS_OPTIONS } from '@svc/operations'
import { CLOCKS_APART_MS, type HoldExpiryScheduler, type TicketsDomain } from './domain/context'
import { expireHold } from './domain/expire-hold'

export interface HoldExpiryJob {
  holdId: string
}

/**
 * A job that ran before its hold's expiresAt (the worker's clock behind the clock of the process that made the hold)
 * runs again 1, 2, 4, … s after, until its retries span CLOCKS_APART_MS (1 + 2 + … + 64 = 127 s: 8 attempts).
 */
const NOT_DUE_RETRY_MS = 1000
const HOLD_EXPIRY_ATTEMPTS = 1 + Math.ceil(Math.log2(CLOCKS_APART_MS / NOT_DUE_RETRY_MS + 1))

export interface HoldExpiryQueue extends HoldExpiryScheduler {
  stop(): Promise<void>
}

export function startHoldExpiry(opts: { domain: TicketsDomain; redisUrl: string; redisPrefix: string; logger: Logger }): HoldExpiryQueue {
  const log = opts.logger.child({ component: 'hold-expiry' })
  const prefix = queuePrefix(opts.redisPrefix)
  const producer = new Redis(opts.redisUrl, { maxRetriesPerRequest: 1, disconnectTimeout: 200, ...REQUEST_REDIS_OPTIONS })
  const queue = producerQueue<HoldExpiryJob>(TICKET_HOLDS_QUEUE, producer, prefix)
  logConnectionErrors(queue, log, 'hold expiry queue: connection error')
  const consumer = new Redis(opts.redisUrl, { maxRetriesPerRequest: null })
  const worker = new Worker<HoldExpiryJob>(
    TICKET_HOLDS_QUEUE,
    async (job: Job<HoldExpiryJob>) => {
      const outcome = await expireHold(opts.domain, job.data.holdId)
      if (outcome === 'not due') throw new Error(`hold ${job.data.holdId} is not due yet`)
      if (outcome === 'released') log.info({ holdId: job.data.holdId }, 'hold expired: its seats returned')
      return outcome
    },
    { connection: consumer, prefix, concurrency: 8 },
  )
  logConnectionErrors(worker, log, 'hold expiry worker: connection error')
  // a job out of tries (its hold kept failing to release, or clocks further apart): the hold still lapses, and the
  // next read of its tiers (availability, a hold, a claim, the dashboard) releases it
  worker.on('failed', (job, err) => {
    if (job && job.attemptsMade >= (job.opts.attempts ?? 1)) log.warn({ err, jobId: job.id, holdId: job.data.holdId, attemptsMade: job.attemptsMade }, 'hold expiry: the job failed for good')
  })
  return {
    // adding it again is a no-op while the job exists (its id is the hold's); a failure is the caller's to log
    async schedule(holdId, expiresAt) {
      const delay = Math.max(0, expiresAt.getTime() - Date.now())
      await queue.add('expire-hold', { holdId }, {
        jobId: holdId,
        delay,
        attempts: HOLD_EXPIRY_ATTEMPTS,
        backoff: { type: 'exponential', delay: NOT_DUE_RETRY_MS },
        // by age and count: by age alone the kept jobs grow with the rate of holds (Redis never evicts)
        removeOnComplete: { age: 24 * 3600, count: 100_000 },
        removeOnFail: { age: 7 * 24 * 3600, count: 100_000 },
      })
    },
    async stop() {
      await worker.close()
      await queue.close()
      consumer.disconnect()
      producer.disconnect()
    },
  }
}
