/**
 * The `domain-events` consumer: every domain event becomes one delivery (id derived from the event id, so a
 * repeated event is the same delivery) queued on `webhook-deliveries` (job id = delivery id, so queueing it again
 * is a no-op). An event for an app without a channel still becomes a delivery (docs/events.md).
 */
import type { Job, Queue } from 'bullmq'
import type { Logger } from 'pino'
import type { DomainEventJob } from '@svc/outbox'
import { deliveryIdForEvent } from '../domain/envelope'
import { createDelivery, enqueueDelivery } from '../domain/deliveries'
import type { EventsModels } from '../models'
import type { DeliveryJob } from '../queues'

export function createDomainEventProcessor(deps: { models: EventsModels; deliveries: Queue<DeliveryJob>; logger: Logger }) {
  return async function processDomainEvent(job: Job<DomainEventJob>): Promise<string> {
    const event = job.data
    const id = deliveryIdForEvent(event.eventId)
    const occurredAt = new Date(event.occurredAt)
    if (Number.isNaN(occurredAt.getTime())) throw new Error(`domain event ${event.eventId}: occurredAt is not a time`)
    const delivery = await createDelivery(deps.models, {
      id,
      appDid: event.appDid,
      environment: event.environment,
      eventId: event.eventId,
      eventType: event.type,
      source: event.source,
      createdAt: occurredAt,
      data: event.data,
    })
    // A delivery already settled needs no job; one still open is (re)queued, a no-op while its job exists.
    if (delivery.status === 'pending' || delivery.status === 'held') await enqueueDelivery(deps.deliveries, delivery)
    deps.logger.info({ eventId: event.eventId, eventType: event.type, deliveryId: id, appDid: event.appDid, environment: event.environment }, 'domain event → delivery')
    return id
  }
}
