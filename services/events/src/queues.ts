/**
 * The events domain's queues. `domain-events` (from @svc/outbox) carries domain events from every domain's outbox
 * relay; `webhook-deliveries` carries one job per delivery (job id = delivery id).
 */
import { DOMAIN_EVENTS_QUEUE, queuePrefix } from '@svc/outbox'

export const WEBHOOK_DELIVERIES_QUEUE = 'webhook-deliveries'

/** Every queue the operators' board shows. */
export const ALL_QUEUES = [DOMAIN_EVENTS_QUEUE, WEBHOOK_DELIVERIES_QUEUE] as const

/** The payload of a `webhook-deliveries` job: the delivery document holds everything else. */
export interface DeliveryJob {
  deliveryId: string
}

/** The backoff type of delivery jobs; the workers' backoffStrategy implements the schedule. */
export const DELIVERY_BACKOFF = 'delivery-schedule'

export { DOMAIN_EVENTS_QUEUE, queuePrefix }
