/**
 * The events domain's queues. `domain-events` (from @svc/outbox) carries domain events from every domain's outbox
 * relay; `webhook-deliveries` carries one job per delivery (job id = delivery id).
 */
import { DOMAIN_EVENTS_QUEUE, queuePrefix, TICKET_HOLDS_QUEUE } from '@svc/outbox'

export const WEBHOOK_DELIVERIES_QUEUE = 'webhook-deliveries'
/** the events workers' own upkeep: `reconcile-deliveries` (workers/reconciler.ts) */
export const EVENTS_MAINTENANCE_QUEUE = 'events-maintenance'

/** Every queue the operators' board shows: the events domain's and the tickets domain's hold expiries. */
export const ALL_QUEUES = [DOMAIN_EVENTS_QUEUE, WEBHOOK_DELIVERIES_QUEUE, EVENTS_MAINTENANCE_QUEUE, TICKET_HOLDS_QUEUE] as const

/** An attempt whose outcome is not in the delivery's log yet: the one being sent, or one whose worker died. */
export interface UnrecordedAttempt {
  number: number
  /** ISO 8601 */
  attemptedAt: string
  channel: 'webhook' | 'xrpc' | null
  url: string | null
}

/**
 * The payload of a `webhook-deliveries` job: what an attempt sends, so the worker sends without reading the delivery
 * (docs/events.md, "Crash safety"). A job of an earlier version carries only `deliveryId`; the worker then reads the
 * delivery.
 */
export interface DeliveryJob {
  deliveryId: string
  /** the request that caused the delivery's event (its `reqId`), logged with each attempt */
  requestId?: string
  appDid?: string
  environment?: 'test' | 'live'
  /** the serialized envelope */
  body?: string
  run?: number
  /** the number of the next attempt */
  next?: number
  /** attempts of this run made before the job was (re)created by the reconciler: the schedule continues after them */
  attemptsBefore?: number
  /**
   * the number of the run's first attempt: the run's attempts are counted by their numbers, so an attempt a dead
   * worker left (logged `interrupted`; BullMQ does not count it) counts too. Absent from jobs made before it existed.
   */
  firstOfRun?: number
  /** the attempt a worker is sending (written to the job before it sends; cleared with a failed attempt's outcome) */
  inFlight?: UnrecordedAttempt | null
  /** attempts of workers that died, not yet written to the delivery's log (with the next outcome) */
  interrupted?: UnrecordedAttempt[]
  /**
   * For a delivery that may have reached a receiver (an attempt answered, timed out or interrupted, or delivered): the
   * time (ms since the epoch) after which no attempt is sent, as receivers may have forgotten its id
   * (domain/deliveries.ts, sendBefore); null while none may have. The worker sets it after the first such attempt.
   * Absent from jobs made before it existed: the worker reads the delivery for those of a redrive's run.
   */
  sendBefore?: number | null
  /**
   * Re-checks made in a row while the app environment's endpoint was paused (the delivery `held`): the next waits
   * holdRecheckDelayMs of it (delivery/processor.ts). Dropped with the next attempt; absent before the first hold.
   */
  holds?: number
  /** when the first of those re-checks' hold began (ms since the epoch): held DELIVERY_HOLD_MAX_MS, the run ends */
  heldSince?: number
  /**
   * Pick-ups in a row that waited because the app environment's receiver is slow and held its share of the worker's
   * slots (delivery/fair-share.ts): the next waits deferDelayMs of it. Dropped with the attempt; absent before.
   */
  deferrals?: number
  /**
   * When the next attempt is due (ms since the epoch), set with a failed attempt's outcome; absent for the job's first
   * pick-up, due when it was queued (with its delay). For svc_delivery_attempt_lateness_seconds (docs/operations.md).
   */
  dueAt?: number
}

/** The backoff type of delivery jobs; the workers' backoffStrategy implements the schedule. */
export const DELIVERY_BACKOFF = 'delivery-schedule'

export { DOMAIN_EVENTS_QUEUE, queuePrefix }
