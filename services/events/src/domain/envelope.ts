/**
 * The event envelope (the contract's Events section) and delivery ids.
 */
import { createHash, randomBytes } from 'node:crypto'
import type { MoneySvcEventReceiveEventInput } from '@svc/lexicons/types'
import type { API_VERSION, Environment } from '@svc/vocabulary'

export { API_VERSION, TEST_EVENT_TYPE } from '@svc/vocabulary'

export const DELIVERY_ID_RE = /^whd_[0-9a-f]{32}$/

/** The envelope as its lexicon declares it (money.svc.event.receiveEvent's input, which is the webhook body too), as this service writes it. */
export type Envelope = MoneySvcEventReceiveEventInput & { apiVersion: typeof API_VERSION; environment: Environment; data: Record<string, unknown> }

/** The delivery of a domain event: derived from its id, so relaying the event twice is one delivery. */
export function deliveryIdForEvent(eventId: string): string {
  return `whd_${createHash('sha256').update(`delivery:${eventId}`).digest('hex').slice(0, 32)}`
}

/** A delivery of its own (test events): random. */
export function newDeliveryId(): string {
  return `whd_${randomBytes(16).toString('hex')}`
}

/** The envelope's JSON, in the contract's field order. */
export function serializeEnvelope(envelope: Envelope): string {
  const { id, type, createdAt, apiVersion, environment, data } = envelope
  return JSON.stringify({ id, type, createdAt, apiVersion, environment, data })
}
