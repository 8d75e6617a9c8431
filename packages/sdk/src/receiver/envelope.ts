/**
 * The event envelope (the contract's Events section), the receiver's error type, and header access that works for
 * node:http headers objects and Fetch `Headers` alike.
 */
import type { MoneySvcEventReceiveEventInput } from '@svc/lexicons/types'
import type { Environment, EventType } from '@svc/vocabulary'

export { API_VERSION_HEADER, DELIVERY_ID_HEADER, EVENT_TYPES, TEST_EVENT_TYPE, type EventType } from '@svc/vocabulary'

/**
 * One delivery: the HTTP webhook body and the receiveEvent input, as the lexicon declares it
 * (money.svc.event.receiveEvent). `id` (`whd_…`) is the idempotency key.
 */
export type EventEnvelope<D = unknown> = Omit<MoneySvcEventReceiveEventInput, 'type' | 'environment' | 'data'> & {
  type: EventType | (string & {})
  environment: Environment
  data: D
}

/**
 * Codes and the HTTP status the request handlers answer with:
 * - `InvalidSignature` (400 webhook, 401 receiveEvent): missing/bad signature, timestamp outside the tolerance,
 *   `webhook-id` ≠ envelope id or ≠ `Svc-Delivery-Id`; for receiveEvent a refused service-auth JWT or wrong issuer.
 * - `ApiVersionMismatch` (400): `svc-api-version` or the envelope's `apiVersion` is not this SDK's API_VERSION.
 * - `InvalidEnvelope` (400): a body that is not an envelope (only reachable after a valid signature or service-auth).
 * - `UnsupportedEvent` (400): no handler for the event type.
 * - `DeliveryInProgress` (409, retryable): another worker holds the claim on this delivery id; the service retries.
 * - `ServiceUnavailable` (503, retryable; receiveEvent): the service's DID document could not be fetched for now to
 *   check its service-auth JWT (its host or the PLC directory did not answer); the service retries.
 */
export type ReceiverErrorCode = 'InvalidSignature' | 'ApiVersionMismatch' | 'InvalidEnvelope' | 'UnsupportedEvent' | 'DeliveryInProgress' | 'ServiceUnavailable'

const STATUS: Record<ReceiverErrorCode, number> = {
  InvalidSignature: 400,
  ApiVersionMismatch: 400,
  InvalidEnvelope: 400,
  UnsupportedEvent: 400,
  DeliveryInProgress: 409,
  ServiceUnavailable: 503,
}

export class ReceiverError extends Error {
  override readonly name = 'ReceiverError'
  readonly code: ReceiverErrorCode
  /** The status the webhook request handler answers with. */
  readonly status: number
  /** True when the same delivery may succeed later unchanged (DeliveryInProgress, ServiceUnavailable). */
  readonly retryable: boolean

  constructor(code: ReceiverErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
    this.status = STATUS[code]
    this.retryable = code === 'DeliveryInProgress' || code === 'ServiceUnavailable'
  }
}

/** node:http `IncomingHttpHeaders`, a plain record, or a Fetch `Headers`. Names are matched case-insensitively. */
export type HeadersLike = { get(name: string): string | null } | Record<string, string | string[] | undefined>

/** All values of a header (a repeated header gives several), in order; [] when absent. */
export function headerValues(headers: HeadersLike, name: string): string[] {
  const lower = name.toLowerCase()
  if (typeof (headers as { get?: unknown }).get === 'function') {
    const v = (headers as { get(name: string): string | null }).get(lower)
    return v === null ? [] : [v]
  }
  const out: string[] = []
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() !== lower || value === undefined) continue
    out.push(...(Array.isArray(value) ? value : [value]))
  }
  return out
}

/** The single value of a header; undefined when absent; throws `code` when given more than once with different values. */
export function singleHeader(headers: HeadersLike, name: string, code: ReceiverErrorCode): string | undefined {
  const values = headerValues(headers, name).map((v) => v.trim())
  if (values.length === 0) return undefined
  if (values.some((v) => v !== values[0])) throw new ReceiverError(code, `conflicting ${name} headers`)
  return values[0]
}

const DELIVERY_ID_RE = /^whd_[\x21-\x7e]{1,200}$/

/** Checks the envelope's shape (not its version); throws ReceiverError('InvalidEnvelope'). */
export function assertEnvelope(value: unknown): asserts value is EventEnvelope {
  const fail = (what: string): never => {
    throw new ReceiverError('InvalidEnvelope', `not an event envelope: ${what}`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) fail('expected a JSON object')
  const e = value as Record<string, unknown>
  if (typeof e.id !== 'string' || !DELIVERY_ID_RE.test(e.id)) fail('id must be a whd_ delivery id')
  if (typeof e.type !== 'string' || e.type === '') fail('type must be a non-empty string')
  if (typeof e.createdAt !== 'string') fail('createdAt must be a string')
  if (typeof e.apiVersion !== 'string') fail('apiVersion must be a string')
  if (e.environment !== 'test' && e.environment !== 'live') fail("environment must be 'test' or 'live'")
  if (typeof e.data !== 'object' || e.data === null || Array.isArray(e.data)) fail('data must be an object')
}
