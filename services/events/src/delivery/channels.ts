/**
 * The request of one attempt on each channel (docs/events.md, "Channels"): the same body, byte for byte, on both.
 * - webhook: Standard Webhooks headers, signed with every active secret of the app environment;
 * - xrpc: POST <receiverUrl>/xrpc/money.svc.event.receiveEvent with a service-auth JWT (iss = this service,
 *   aud = the app, lxm = receiveEvent, 60 s, random jti) signed with SERVICE_SIGNING_KEY, and the same Standard
 *   Webhooks signature headers: the token says who sends, but not what, nor for which environment (one token for
 *   test and live); the signature, with the environment's own secrets, covers the body.
 */
import { mintServiceJwt, type MintServiceJwtParams } from '@svc/service-auth'
import { API_VERSION, API_VERSION_HEADER, DELIVERY_ID_HEADER } from '@svc/vocabulary'
import { webhookSignatureHeader } from './signature'
import type { OutgoingRequest } from './transport'

export const RECEIVE_EVENT_NSID = 'money.svc.event.receiveEvent'
export const USER_AGENT = `svc-webhooks/${API_VERSION}`

export interface DeliveryToSend {
  id: string
  appDid: string
  body: string
}

/**
 * The `svc-api-version` of a delivery: its envelope's `apiVersion`, fixed when the delivery was written, so a retry or
 * redrive after a version change still sends a header that matches its body (receivers check both).
 */
function apiVersionOf(body: string): string {
  try {
    const version = (JSON.parse(body) as { apiVersion?: unknown } | null)?.apiVersion
    return typeof version === 'string' ? version : API_VERSION
  } catch {
    return API_VERSION
  }
}

/** The Standard Webhooks headers of a delivery, signed with `secrets` (the active ones, newest first). */
function signatureHeaders(delivery: DeliveryToSend, secrets: readonly string[], now: number): Record<string, string> {
  const timestamp = Math.floor(now / 1000)
  return {
    'webhook-id': delivery.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': webhookSignatureHeader(secrets, delivery.id, timestamp, delivery.body),
  }
}

/** The HTTP webhook request; `secrets` are the active signing secrets, newest first. */
export function webhookRequest(url: string, delivery: DeliveryToSend, secrets: readonly string[], now: number = Date.now()): OutgoingRequest {
  return {
    url,
    body: delivery.body,
    headers: {
      'content-type': 'application/json',
      ...signatureHeaders(delivery, secrets, now),
      [DELIVERY_ID_HEADER]: delivery.id,
      [API_VERSION_HEADER]: apiVersionOf(delivery.body),
      'user-agent': USER_AGENT,
    },
  }
}

/** `<origin>/xrpc/money.svc.event.receiveEvent` of a receiver URL. */
export function receiveEventUrl(receiverUrl: string): string {
  return new URL(`/xrpc/${RECEIVE_EVENT_NSID}`, receiverUrl).toString()
}

/** The XRPC receiveEvent request, with a fresh service-auth JWT and the body signed with `secrets`. */
export async function xrpcRequest(
  receiverUrl: string,
  delivery: DeliveryToSend,
  service: { did: string; keypair: MintServiceJwtParams['keypair'] },
  secrets: readonly string[],
  now: number = Date.now(),
): Promise<OutgoingRequest> {
  const jwt = await mintServiceJwt({ keypair: service.keypair, iss: service.did, aud: delivery.appDid, lxm: RECEIVE_EVENT_NSID, expiresInSeconds: 60 })
  return {
    url: receiveEventUrl(receiverUrl),
    body: delivery.body,
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${jwt}`,
      ...(secrets.length > 0 ? signatureHeaders(delivery, secrets, now) : {}),
      [DELIVERY_ID_HEADER]: delivery.id,
      [API_VERSION_HEADER]: apiVersionOf(delivery.body),
      'user-agent': USER_AGENT,
    },
  }
}
