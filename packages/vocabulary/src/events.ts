/** The event vocabulary (the contract's Events section), shared by the service that sends events and the SDK that receives them. */

/** The API version of every event: the envelope's `apiVersion` and the `svc-api-version` header. */
export const API_VERSION = '2026-06'

/**
 * Event types of API version 2026-06: the contract names `payment.completed` and `app.webhook.test`; the authorization
 * and ticket events are this service's (docs/events.md).
 */
export const EVENT_TYPES = ['payment.completed', 'app.webhook.test', 'app.authorization.granted', 'app.authorization.revoked', 'ticket.issued', 'ticket.voided'] as const
export type EventType = (typeof EVENT_TYPES)[number]

/** A delivery's states: on its way (`pending`), held for a paused or disabled endpoint, and the two ends. */
export const DELIVERY_STATUSES = ['pending', 'held', 'delivered', 'failed'] as const
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number]

/** The test-event utility's probe: never a real order. */
export const TEST_EVENT_TYPE = 'app.webhook.test' satisfies EventType

/** The delivery's id (the envelope's `id`) on every attempt, on both channels. */
export const DELIVERY_ID_HEADER = 'svc-delivery-id'
/** The event's API version on every attempt, on both channels. */
export const API_VERSION_HEADER = 'svc-api-version'
