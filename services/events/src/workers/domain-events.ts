/**
 * The `domain-events` consumer: every domain event becomes one delivery (id derived from the event id, so a
 * repeated event is the same delivery) queued on `webhook-deliveries` (job id = delivery id, so queueing it again
 * is a no-op). An event for an app without a channel still becomes a delivery (docs/events.md).
 */
import type { Job, Queue } from 'bullmq'
import type { Logger } from 'pino'
import type { DomainEventJob } from '@svc/outbox'
import { deliveryIdForEvent } from '../domain/envelope'
import { createDelivery, queueRestOfRun } from '../domain/deliveries'
import type { DeliveryLogStore } from '../domain/delivery-log-pages'
import type { DeliveryJob } from '../queues'

export function createDomainEventProcessor(deps: DeliveryLogStore & { deliveries: Queue<DeliveryJob>; logger: Logger }) {
  return async function processDomainEvent(job: Job<DomainEventJob>): Promise<string> {
    const event = job.data
    const id = deliveryIdForEvent(event.eventId)
    const occurredAt = new Date(event.occurredAt)
    if (Number.isNaN(occurredAt.getTime())) throw new Error(`domain event ${event.eventId}: occurredAt is not a time`)
    const delivery = await createDelivery(deps, {
      id,
      appDid: event.appDid,
      environment: event.environment,
      eventId: event.eventId,
      eventType: event.type,
      source: event.source,
      createdAt: occurredAt,
      data: event.data,
      requestId: event.requestId ?? null,
    })
    // A delivery already settled needs no job; one still open is (re)queued for the rest of its run (the event
    // replayed after Redis lost its data: the attempts it has left, at its next attempt), a no-op while its job exists
    if (delivery.status === 'pending' || delivery.status === 'held') await queueRestOfRun(deps.deliveries, delivery, new Date())
    deps.logger.info({ ...(event.requestId ? { reqId: event.requestId } : {}), eventId: event.eventId, eventType: event.type, deliveryId: id, appDid: event.appDid, environment: event.environment }, 'domain event → delivery')
    return id
  }
}

/** At most this many failed domain events are retried per reconcile run. */
export const DOMAIN_EVENT_RETRY_BATCH = 1000

/**
 * A domain event whose job failed for good (it stalled in dying workers too often, or used its tries while the
 * database was away) would never become a delivery: its outbox had marked it relayed. The reconciler turns each such
 * event into its delivery itself (the processor is idempotent) and only then removes the failed job: removing it
 * first and adding it again would lose the event to a process that stopped between the two. One that keeps failing
 * stays failed, is tried again with a warning naming it, and stays visible on the board.
 *
 * A run takes `batch` of the failed jobs (newest first) from position `from`, and returns where the next run starts:
 * past those still failing, or back at the start after the last page. So failed jobs that keep failing, however
 * many, never keep the ones behind them from being tried: each is tried once per lap of the failed set.
 */
export async function retryFailedDomainEvents(
  queue: Queue<DomainEventJob>,
  processDomainEvent: (job: Job<DomainEventJob>) => Promise<string>,
  log: Logger,
  { from = 0, batch = DOMAIN_EVENT_RETRY_BATCH }: { from?: number; batch?: number } = {},
): Promise<{ retried: number; next: number }> {
  const page = { from, batch }
  let retried = 0
  let stillFailing = 0
  const jobs = await queue.getFailed(page.from, page.from + page.batch - 1)
  for (const job of jobs) {
    try {
      await processDomainEvent(job)
    } catch (err) {
      stillFailing++
      log.warn({ err, eventId: job.data.eventId, failedReason: job.failedReason }, 'reconcile: a failed domain event is still not a delivery; the next lap tries again')
      continue
    }
    // a job another reconciler removed meanwhile, or one locked by a worker: its delivery exists all the same
    await job.remove().catch((err: unknown) => log.debug({ err, jobId: job.id }, 'reconcile: a failed domain event job could not be removed'))
    retried++
    log.warn({ eventId: job.data.eventId, failedReason: job.failedReason }, 'reconcile: a failed domain event became its delivery')
  }
  return { retried, next: jobs.length < page.batch ? 0 : page.from + stillFailing }
}
