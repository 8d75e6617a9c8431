/**
 * Standard Webhooks signatures (docs/events.md, "Channels"): `v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`
 * where the key is the base64-decoded part of `whsec_<base64>`; one signature per active secret, space separated.
 */
import { createHmac } from 'node:crypto'

const SECRET_PREFIX = 'whsec_'

/** The HMAC key of a `whsec_` secret: its bytes, exactly as Standard Webhooks libraries derive them. */
export function secretKeyBytes(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new TypeError('a signing secret starts with whsec_')
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')
}

/** One `v1,…` signature of a delivery body with one secret. */
export function signatureV1(secret: string, deliveryId: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secretKeyBytes(secret)).update(`${deliveryId}.${timestamp}.${body}`).digest('base64')
  return `v1,${mac}`
}

/** The `webhook-signature` header: one signature per active secret (newest first), space separated. */
export function webhookSignatureHeader(secrets: readonly string[], deliveryId: string, timestamp: number, body: string): string {
  if (secrets.length === 0) throw new Error('no signing secret')
  return secrets.map((secret) => signatureV1(secret, deliveryId, timestamp, body)).join(' ')
}
