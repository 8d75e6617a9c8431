/**
 * The `domain-events` consumer: every domain event becomes one delivery (id derived from the event id, so a
 * repeated event is the same delivery) queued on `webhook-deliveries` (job id = delivery id, so queueing it again
 * is a no-op). An event for an app without a channel still becomes a delivery (docs/events.md).
 */
import type { Job, Queue } from 'bullmq'
import type { Logger } from 'pino'
import { DOMAIN_EVENT_JOB_OPTIONS, type DomainEventJob } from '@svc/outbox'
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
    })
    // A delivery already settled needs no job; one still open is (re)queued for the rest of its run (the event
    // replayed after Redis lost its data: the attempts it has left, at its next attempt), a no-op while its job exists
    if (delivery.status === 'pending' || delivery.status === 'held') await queueRestOfRun(deps.deliveries, delivery, new Date())
    deps.logger.info({ eventId: event.eventId, eventType: event.type, deliveryId: id, appDid: event.appDid, environment: event.environment }, 'domain event → delivery')
    return id
  }
}

/** At most this many failed domain events are retried per reconcile run. */
export const DOMAIN_EVENT_RETRY_BATCH = 1000

/**
 * A domain event whose job failed for good (it stalled in dying workers too often, or used its tries while the
 * database was away) would never become a delivery: its outbox had marked it relayed. The reconciler puts such jobs
 * back on the queue (the processor is idempotent). One that keeps failing is retried every run, each time with a
 * warning naming it, so an operator sees it (and it stays visible on the board).
 */
export async function retryFailedDomainEvents(queue: Queue<DomainEventJob>, log: Logger): Promise<number> {
  let retried = 0
  for (const job of await queue.getFailed(0, DOMAIN_EVENT_RETRY_BATCH - 1)) {
    try {
      // a new job under the same id, not a retry: BullMQ keeps a job's count of stalls through a retry, so one that
      // failed for stalling would fail again at its next stall (the add is a no-op if a relay added it meanwhile)
      await job.remove()
      await queue.add(job.name, job.data, { ...DOMAIN_EVENT_JOB_OPTIONS, jobId: job.id })
      retried++
      log.warn({ eventId: job.data.eventId, failedReason: job.failedReason }, 'reconcile: a failed domain event was queued again')
    } catch (err) {
      // retried meanwhile by another worker's reconciler, or removed
      log.debug({ err, jobId: job.id }, 'reconcile: a failed domain event could not be retried')
    }
  }
  return retried
}
