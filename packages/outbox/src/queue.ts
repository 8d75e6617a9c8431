/**
 * The queue every domain's outbox relay publishes to and the events domain consumes: `domain-events`.
 * One job per outbox event, job id = event id (`evt_…`), so publishing an event twice is one job. Also the names of
 * the other domains' queues, which the operators' board (events) shows beside its own.
 */
import { Queue } from 'bullmq'
import type { Redis } from 'ioredis'
import type { Environment } from '@svc/vocabulary'

export const DOMAIN_EVENTS_QUEUE = 'domain-events'

/** the tickets domain's hold expiries: one delayed job per hold, job id = hold id (services/tickets/src/hold-expiry.ts) */
export const TICKET_HOLDS_QUEUE = 'ticket-holds'

/** The domains that write an outbox. */
export type EventSource = 'apps' | 'payments' | 'tickets'

/** The payload of a `domain-events` job (the job's name is the event type). */
export interface DomainEventJob {
  /** `evt_…`: the outbox event id, also the job id */
  eventId: string
  source: EventSource
  type: string
  environment: Environment
  appDid: string
  data: Record<string, unknown>
  /** ISO time of the state change */
  occurredAt: string
  /** the request that caused it (absent: a sweep, a worker, or an event written before request ids were kept) */
  requestId?: string
}

/** BullMQ's key prefix for a Redis key prefix (REDIS_PREFIX): every queue of one deployment lives under it. */
export function queuePrefix(redisPrefix: string): string {
  return `${redisPrefix}bull`
}

/**
 * A queue that only adds jobs, on a connection whose commands fail while Redis is away (maxRetriesPerRequest set, so
 * a request answers at once rather than wait). BullMQ asks Redis its version (INFO) once, when the queue is made; on
 * such a connection that one command can fail (Redis dropping between its ready and the answer), and the queue then
 * refuses every add until the process restarts. So the producers skip it: the workers, which block on Redis and need
 * its capabilities, check the version. Nor does it wait for the connection's first ready: a queue made while Redis
 * is away would hold every add until Redis came back (a ticket hold's request hung past the gateway's deadline);
 * an add fails as the connection's commands do.
 */
export function producerQueue<T>(name: string, connection: Redis, prefix: string): Queue<T> {
  return new Queue<T>(name, { connection, prefix, skipVersionCheck: true, skipWaitingForReady: true })
}
