/**
 * Standard Webhooks verification (DESIGN.md §4): `webhook-signature: v1,<base64 HMAC-SHA256(key, "id.timestamp.body")>`
 * with the key of `whsec_<base64>`, several space-separated signatures allowed (secret rotation), `webhook-timestamp`
 * within the tolerance; plus the contract's `Svc-Delivery-Id` and `svc-api-version` headers.
 *
 * The HMAC is computed by the `standardwebhooks` package (`Webhook.sign`); the timestamp check (tolerance and clock
 * injectable) and the constant-time comparison (node:crypto timingSafeEqual) are ours.
 */
import { timingSafeEqual } from 'node:crypto'
import { Webhook } from 'standardwebhooks'
// Circular with ../index, read only inside functions (never at module load): safe in CJS and ESM.
import { API_VERSION } from '../version'
import {
  API_VERSION_HEADER,
  DELIVERY_ID_HEADER,
  ReceiverError,
  assertEnvelope,
  headerValues,
  singleHeader,
  type EventEnvelope,
  type HeadersLike,
} from './envelope'

export const DEFAULT_TOLERANCE_SECONDS = 300

export interface WebhookSecrets {
  /** `whsec_<base64>`; during a rotation give both (`secrets`), any one matching signature is accepted. */
  secret?: string
  secrets?: readonly string[]
}

export interface VerifyWebhookOptions extends WebhookSecrets {
  /** The body exactly as received (before any JSON parsing). */
  rawBody: string | Buffer | Uint8Array
  headers: HeadersLike
  /** Largest accepted |now - webhook-timestamp|, seconds (default 300). */
  toleranceSeconds?: number
  /** Current time (ms since epoch or a Date); default Date.now(). */
  now?: number | Date
}

/** Keys of the given secrets; TypeError (a configuration bug, not a delivery problem) when none or one is malformed. */
export function webhookKeys(options: WebhookSecrets): Webhook[] {
  const all = [...(options.secret !== undefined ? [options.secret] : []), ...(options.secrets ?? [])]
  if (all.length === 0) throw new TypeError('give the webhook signing secret (secret or secrets)')
  return all.map((s) => {
    if (typeof s !== 'string' || !/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(s.trim())) {
      throw new TypeError('a webhook signing secret must be whsec_<base64>')
    }
    try {
      return new Webhook(s.trim())
    } catch {
      throw new TypeError('a webhook signing secret must be whsec_<base64>')
    }
  })
}

function bodyString(rawBody: unknown): string {
  if (typeof rawBody === 'string') return rawBody
  if (rawBody instanceof Uint8Array) return Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength).toString('utf8')
  throw new TypeError('rawBody must be the raw request body (string or Buffer), not a parsed object')
}

function equalConstantTime(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8')
  const y = Buffer.from(b, 'utf8')
  return x.length === y.length && timingSafeEqual(x, y)
}

/** A tolerance given must be a whole number of seconds: NaN or Infinity (an unset variable, say) would turn the replay window off. */
export function assertTolerance(toleranceSeconds: number | undefined): void {
  if (toleranceSeconds !== undefined && (!Number.isInteger(toleranceSeconds) || toleranceSeconds < 0)) {
    throw new TypeError('toleranceSeconds must be a non-negative integer')
  }
}

/** Verifies the signature with pre-built keys; see verifyWebhook. */
export function verifyWebhookWithKeys(keys: readonly Webhook[], options: Omit<VerifyWebhookOptions, 'secret' | 'secrets'>): EventEnvelope {
  const { headers } = options
  const body = bodyString(options.rawBody)
  const id = singleHeader(headers, 'webhook-id', 'InvalidSignature')
  const timestamp = singleHeader(headers, 'webhook-timestamp', 'InvalidSignature')
  // space-separated; a header sent twice arrives joined by ", " (node:http, fetch's Headers): the comma is not the
  // signature's (base64 never ends with one)
  const signatures = headerValues(headers, 'webhook-signature')
    .flatMap((v) => v.split(/\s+/))
    .map((s) => s.replace(/,$/, ''))
    .filter((s) => s !== '')
  if (!id || !timestamp || signatures.length === 0) {
    throw new ReceiverError('InvalidSignature', 'missing webhook-id, webhook-timestamp or webhook-signature')
  }
  if (!/^\d{1,12}$/.test(timestamp)) throw new ReceiverError('InvalidSignature', 'webhook-timestamp is not a unix time')
  assertTolerance(options.toleranceSeconds)
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS
  const nowMs = options.now === undefined ? Date.now() : typeof options.now === 'number' ? options.now : options.now.getTime()
  // NaN would make every age pass the comparison below
  if (!Number.isFinite(nowMs)) throw new TypeError('now must be a valid time')
  const ts = Number(timestamp)
  if (Math.abs(Math.floor(nowMs / 1000) - ts) > tolerance) {
    throw new ReceiverError('InvalidSignature', 'webhook-timestamp is outside the tolerance')
  }

  let matched = false
  for (const key of keys) {
    const expected = key.sign(id, new Date(ts * 1000), body)
    // Check every candidate (no early exit) so timing does not tell which one matched.
    for (const candidate of signatures) if (equalConstantTime(candidate, expected)) matched = true
  }
  if (!matched) throw new ReceiverError('InvalidSignature', 'no matching v1 signature')

  // Authentic from here on.
  let envelope: unknown
  try {
    envelope = JSON.parse(body)
  } catch {
    throw new ReceiverError('InvalidEnvelope', 'the body is not JSON')
  }
  assertEnvelope(envelope)
  const deliveryId = singleHeader(headers, DELIVERY_ID_HEADER, 'InvalidSignature')
  if (envelope.id !== id) throw new ReceiverError('InvalidSignature', 'webhook-id does not match the envelope id')
  if (deliveryId !== id) throw new ReceiverError('InvalidSignature', 'Svc-Delivery-Id does not match webhook-id')
  assertApiVersion(envelope, singleHeader(headers, API_VERSION_HEADER, 'ApiVersionMismatch'), true)
  return envelope
}

/**
 * The contract's version check: the `svc-api-version` header (required when `headerRequired`) and the envelope's
 * `apiVersion` must both be this SDK's API_VERSION; otherwise ReceiverError('ApiVersionMismatch').
 */
export function assertApiVersion(envelope: EventEnvelope, header: string | undefined, headerRequired: boolean): void {
  if (header === undefined && headerRequired) throw new ReceiverError('ApiVersionMismatch', `svc-api-version header missing (expected ${API_VERSION})`)
  if (header !== undefined && header !== API_VERSION) {
    throw new ReceiverError('ApiVersionMismatch', `svc-api-version ${header} is not ${API_VERSION}`)
  }
  if (envelope.apiVersion !== API_VERSION) {
    throw new ReceiverError('ApiVersionMismatch', `event apiVersion ${envelope.apiVersion} is not ${API_VERSION}`)
  }
}

/**
 * Verifies one HTTP webhook delivery and returns its envelope. Throws ReceiverError:
 * `InvalidSignature` (missing/bad signatures, timestamp outside `toleranceSeconds`, webhook-id ≠ envelope id or ≠
 * Svc-Delivery-Id), `ApiVersionMismatch` (svc-api-version header or envelope apiVersion ≠ API_VERSION),
 * `InvalidEnvelope` (a correctly signed body that is not an envelope). TypeError for a missing/malformed secret.
 */
export function verifyWebhook(options: VerifyWebhookOptions): EventEnvelope {
  return verifyWebhookWithKeys(webhookKeys(options), options)
}
