/**
 * Runs `reconcile-deliveries` (domain/reconcile.ts, then the held deliveries whose endpoint was unpaused:
 * delivery/release-held.ts, then the failed domain events: domain-events.ts) on the
 * `events-maintenance` queue, where operators see every run
 * and its counts on the board: once when the workers start, once whenever their Redis connection comes back (a
 * restart may have lost every job), and every `periodMs`. Each worker process adds the periodic job with the period
 * as its job id, so however many workers run, each period reconciles once, and none adds it while a run is still
 * waiting (a run slower than the period, hundreds of thousands of held deliveries, would otherwise pile runs up
 * behind it, each redoing the whole check); the adds come from a timer in the process, not from a schedule kept in
 * Redis, so losing Redis's data does not stop them.
 */
import { Queue, Worker, type Job } from 'bullmq'
import type Redis from 'ioredis'
import type { Logger } from 'pino'
import { logRedisOutage } from '@svc/operations'
import type { EndpointClient } from '../delivery/endpoint'
import { releaseUnpausedHolds } from '../delivery/release-held'
import { reconcileDeliveries, type ReconcileResult } from '../domain/reconcile'
import type { EventsModels } from '../models'
import type { DomainEventJob } from '@svc/outbox'
import { EVENTS_MAINTENANCE_QUEUE, type DeliveryJob } from '../queues'
import { retryFailedDomainEvents } from './domain-events'

export const RECONCILE_JOB = 'reconcile-deliveries'

export interface Reconciler {
  stop(): Promise<void>
}

export function startReconciler(opts: {
  models: EventsModels
  deliveries: Queue<DeliveryJob>
  domainEvents: Queue<DomainEventJob>
  /** turns a domain event into its delivery (the domain-events processor) */
  processDomainEvent: (job: Job<DomainEventJob>) => Promise<string>
  /** the endpoint lookup the delivery workers make (held deliveries are released when theirs is unpaused) */
  endpoints: Pick<EndpointClient, 'lookup'>
  redis: Redis
  prefix: string
  periodMs: number
  logger: Logger
  /** failed domain events a run takes (retryFailedDomainEvents' default unless given) */
  domainEventsBatch?: number
}): Reconciler {
  const log = opts.logger.child({ worker: EVENTS_MAINTENANCE_QUEUE })
  const queue = new Queue(EVENTS_MAINTENANCE_QUEUE, { connection: opts.redis, prefix: opts.prefix })
  // where the next run takes failed domain events from: in Redis, as each run goes to whichever workers process takes
  // its job (a place per process would slow a lap down by their number, and a restart would start it again)
  const domainEventsPlace = `${opts.prefix}:${EVENTS_MAINTENANCE_QUEUE}:domain-events-from`
  const worker = new Worker<unknown, ReconcileResult & { heldReleased: number; domainEventsRetried: number }>(
    EVENTS_MAINTENANCE_QUEUE,
    async (job) => {
      // its progress on the board as it goes (a job's progress may fail to save: the run goes on)
      const result = await reconcileDeliveries(opts.models, opts.deliveries, log, new Date(), (progress) => job.updateProgress({ ...progress }).catch(() => undefined))
      const { released: heldReleased } = await releaseUnpausedHolds(opts.models, opts.deliveries, opts.endpoints, log)
      const from = Number(await opts.redis.get(domainEventsPlace)) || 0
      const { retried: domainEventsRetried, next } = await retryFailedDomainEvents(opts.domainEvents, opts.processDomainEvent, log, { from, batch: opts.domainEventsBatch })
      await opts.redis.set(domainEventsPlace, String(next))
      await job.log(`checked ${result.checked} open deliveries, queued ${result.requeued} again; released ${heldReleased} held deliveries; ${domainEventsRetried} failed domain events became their deliveries`).catch(() => undefined)
      return { ...result, heldReleased, domainEventsRetried }
    },
    { connection: opts.redis, prefix: opts.prefix, concurrency: 1 },
  )
  logRedisOutage([worker, queue], opts.redis, log, 'reconciler')
  // a run that failed (the database away mid-run): the next period's run starts over
  worker.on('failed', (job, err) => log.error({ err, jobId: job?.id }, 'reconcile run failed; the next period runs again'))

  const add = (jobId: string) =>
    queue
      .add(RECONCILE_JOB, {}, { jobId, removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } })
      .catch((err: unknown) => log.warn({ err, jobId }, 'could not add the reconcile job; the next period will'))
  const periodic = async () => {
    // a run waiting to start covers this period as well
    const waiting = await queue.getJobCountByTypes('waiting', 'prioritized', 'delayed').catch(() => 0)
    if (waiting === 0) await add(`${RECONCILE_JOB}-${Math.floor(Date.now() / opts.periodMs)}`)
  }
  const once = (why: string) => void add(`${RECONCILE_JOB}-${why}-${Date.now()}-${process.pid}`)

  once('start')
  const timer = setInterval(() => void periodic(), opts.periodMs)
  timer.unref()
  // 'ready' after the first connection: Redis came back, maybe without its data
  let connected = opts.redis.status === 'ready'
  const onReady = () => {
    if (connected) once('reconnect')
    connected = true
  }
  opts.redis.on('ready', onReady)

  return {
    async stop() {
      clearInterval(timer)
      opts.redis.off('ready', onReady)
      await worker.close()
      await queue.close()
    },
  }
}
