/**
 * The receiver flow (contract, Events → Receiver rules) and request handlers for both delivery channels:
 * the HTTP webhook (Standard Webhooks signature) and the app-hosted XRPC method money.svc.event.receiveEvent
 * (service-auth JWT from the service's DID to the app's DID).
 */
import type { ServiceAuthVerifier } from '@svc/service-auth'
import {
  API_VERSION_HEADER,
  DELIVERY_ID_HEADER,
  ReceiverError,
  TEST_EVENT_TYPE,
  assertEnvelope,
  singleHeader,
  type EventEnvelope,
  type HeadersLike,
} from './envelope'
import type { DeliveryClaimStore } from './stores'
import { assertApiVersion, assertTolerance, verifyWebhookWithKeys, webhookKeys, type WebhookSecrets } from './verify'

export const RECEIVE_EVENT_NSID = 'money.svc.event.receiveEvent'
export const DEFAULT_CLAIM_TTL_MS = 5 * 60 * 1000

export type EventHandler = (envelope: EventEnvelope) => Promise<void>
/** Handlers by event type. `app.webhook.test` never reaches them (see onTestEvent). */
export type EventHandlers = Partial<Record<string, EventHandler>>

export interface HandleDeliveryOptions {
  store: DeliveryClaimStore
  handlers: EventHandlers
  /**
   * The one environment this receiver takes events of: another environment's event is refused (InvalidEnvelope, so
   * its delivery fails in that environment's log) before any handler or claim. Set it when one receiver URL is
   * configured for both environments: on the XRPC channel the service's token is the same for test and live, so
   * without the environment's signing secret only the envelope's `environment` tells a test order from a live one.
   */
  environment?: 'test' | 'live'
  /** Runs for `app.webhook.test` probes (claimed like any delivery). Without it they are acknowledged untouched. */
  onTestEvent?: EventHandler
  /** How long a claim holds before another worker may take over (default 5 minutes). */
  claimTtlMs?: number
  /** Called when recording `done` failed after the handler succeeded; the delivery is still acknowledged. */
  onCompleteError?: (err: unknown, envelope: EventEnvelope) => void
  /**
   * The request handlers call it with an error answered 500 (a handler's, the claim store's, a wiring mistake such
   * as a parsed body where the raw one is needed): the answer never echoes it, so this is where to log it.
   */
  onError?: (err: unknown) => void
}

export interface HandleDeliveryResult {
  ok: true
  /** The delivery id was already processed (the contract: answer 2xx). */
  duplicate: boolean
  /** An app.webhook.test probe. */
  test: boolean
}

/**
 * Claims the delivery id, runs the handler for the type, then completes the claim; on a handler error releases the
 * claim and rethrows (the service retries). Already done → `{ duplicate: true }` (also for a type without handler
 * now); claimed elsewhere → ReceiverError('DeliveryInProgress') (409, retryable; also for a type without handler here: the
 * worker holding it decides); a type without handler →
 * ReceiverError('UnsupportedEvent').
 * Test events (`app.webhook.test`) never reach `handlers`: they go to `onTestEvent`, else are acknowledged.
 */
export async function handleDelivery(options: HandleDeliveryOptions & { envelope: EventEnvelope }): Promise<HandleDeliveryResult> {
  const { store, envelope } = options
  if (options.environment !== undefined && envelope.environment !== options.environment) {
    throw new ReceiverError('InvalidEnvelope', `this receiver takes ${options.environment} events only; this is a ${envelope.environment} event`)
  }
  const test = envelope.type === TEST_EVENT_TYPE
  let handler: EventHandler | undefined
  if (test) {
    handler = options.onTestEvent
    if (handler === undefined) return { ok: true, duplicate: false, test }
  } else {
    // Own properties only: a type like "constructor" must not find Object.prototype's.
    handler = Object.hasOwn(options.handlers, envelope.type) ? options.handlers[envelope.type] : undefined
  }

  const claim = await store.claim(envelope.id, options.claimTtlMs ?? DEFAULT_CLAIM_TTL_MS)
  // an id already processed is answered 2xx (the contract), even once its type has lost its handler (a deploy since)
  if (claim.state === 'done') return { ok: true, duplicate: true, test }
  // another worker has it (one that has the type's handler, during a rolling deploy): it decides, this one need not
  if (claim.state === 'processing') throw new ReceiverError('DeliveryInProgress', `delivery ${envelope.id} is being processed`)
  if (typeof handler !== 'function') {
    await store.release(envelope.id, claim.token).catch(() => undefined)
    throw new ReceiverError('UnsupportedEvent', `event type ${envelope.type} is not supported`)
  }
  try {
    await handler(envelope)
  } catch (err) {
    await store.release(envelope.id, claim.token).catch(() => undefined) // if this fails the claim lapses after its TTL
    throw err
  }
  try {
    await store.complete(envelope.id, claim.token)
  } catch (err) {
    // The work is done: acknowledging avoids a retry that would run it again once the claim lapses (so a callback
    // that throws is not let turn it into a 500 either).
    try {
      options.onCompleteError?.(err, envelope)
    } catch {
      // ignored, as above
    }
  }
  return { ok: true, duplicate: false, test }
}

export interface ReceiverResponse {
  status: number
  body: unknown
}

function errorResponse(err: unknown, statusFor: (e: ReceiverError) => number, onError?: (err: unknown) => void): ReceiverResponse {
  if (err instanceof ReceiverError) return { status: statusFor(err), body: { error: err.code, message: err.message } }
  try {
    onError?.(err)
  } catch {
    // a callback that throws does not change the answer
  }
  return { status: 500, body: { error: 'InternalServerError', message: 'the event could not be processed' } }
}

export type WebhookRequestHandlerOptions = WebhookSecrets &
  Omit<HandleDeliveryOptions, 'envelope'> & {
    toleranceSeconds?: number
    now?: () => number
  }

/**
 * `(req) => { status, body }` for the HTTP webhook. Give it the raw body (before JSON parsing) and the headers.
 * 200 `{ ok: true }` (processed or test probe), 200 `{ ok: true, duplicate: true }`, 400 `{ error, message }` for
 * InvalidSignature / ApiVersionMismatch / InvalidEnvelope / UnsupportedEvent, 409 DeliveryInProgress, 500 when the
 * handler threw (the message is not echoed; `onError` gets the error). Every non-2xx answer is retried by the service.
 */
export function createWebhookRequestHandler(
  options: WebhookRequestHandlerOptions,
): (req: { rawBody: string | Buffer | Uint8Array; headers: HeadersLike }) => Promise<ReceiverResponse> {
  const keys = webhookKeys(options)
  assertTolerance(options.toleranceSeconds)
  return async (req) => {
    try {
      const envelope = verifyWebhookWithKeys(keys, {
        rawBody: req.rawBody,
        headers: req.headers,
        toleranceSeconds: options.toleranceSeconds,
        now: options.now?.(),
      })
      const result = await handleDelivery({ ...options, envelope })
      return { status: 200, body: result.duplicate ? { ok: true, duplicate: true } : { ok: true } }
    } catch (err) {
      return errorResponse(err, (e) => e.status, options.onError)
    }
  }
}

export type ReceiveEventHandlerOptions = Omit<HandleDeliveryOptions, 'envelope'> &
  WebhookSecrets & {
  /** The service's DID: the required `iss` of the service-auth JWT. */
  serviceDid: string
  /** with `secret(s)`: largest accepted |now - webhook-timestamp|, seconds (default 300) */
  toleranceSeconds?: number
  now?: () => number
} & (
    | {
        /**
         * A @svc/service-auth verifier built for the app: `createServiceAuthVerifier({ serviceDid: <app DID>, … })`
         * (its `serviceDid` is the audience, i.e. the app). It checks aud, lxm, exp, signature and jti replay.
         */
        verifier: ServiceAuthVerifier
        verifyServiceAuth?: undefined
      }
    | {
        verifier?: undefined
        /**
         * Your own check of the Authorization header (aud = app DID, lxm = receiveEvent, signature, expiry, jti): resolve
         * with the issuer, throw to refuse (any throw answers 401 InvalidSignature).
         */
        verifyServiceAuth: (authorization: string | undefined) => Promise<{ iss: string }>
      }
  )

/**
 * `(req) => { status, body }` for the XRPC procedure money.svc.event.receiveEvent. `body` is the parsed JSON input
 * (a string or Buffer is parsed). Answers 200 `{ ok: true }` (also for duplicates and test probes); 401
 * InvalidSignature when service-auth is refused or the issuer is not `serviceDid`; otherwise as the webhook handler.
 * Svc-Delivery-Id and svc-api-version are required (the service sends both), and must match the envelope.
 *
 * With the environment's signing secret (`secret` or `secrets`, as for webhooks), the body's Standard Webhooks
 * signature is checked too (401 InvalidSignature): the token proves the sender but covers neither the body nor the
 * environment (one token for test and live), so a token read off a test delivery could carry a forged live event
 * to a receiver that checks the token alone. `body` must then be the raw body (a string or Buffer).
 */
/** The `iss` a bearer JWT names, unverified; undefined when it cannot be read (the verifier then refuses it). */
function unverifiedIssuer(authorization: string | undefined): string | undefined {
  const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1]
  const payload = token?.split('.')[1]
  if (!payload) return undefined
  try {
    const iss = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { iss?: unknown }).iss
    return typeof iss === 'string' ? iss : undefined
  } catch {
    return undefined
  }
}

export function createReceiveEventHandler(
  options: ReceiveEventHandlerOptions,
): (req: { headers: HeadersLike; body: unknown }) => Promise<ReceiverResponse> {
  if (!options.verifier === !options.verifyServiceAuth) throw new TypeError('give exactly one of verifier or verifyServiceAuth')
  // named at all (even as undefined: an unset environment variable) means the check is wanted: webhookKeys refuses a
  // missing secret rather than let the handler fall back to the token alone
  const keys = 'secret' in options || 'secrets' in options ? webhookKeys(options) : null
  assertTolerance(options.toleranceSeconds)
  const authenticate = async (authorization: string | undefined): Promise<{ iss: string }> =>
    options.verifier ? options.verifier.verify(authorization, RECEIVE_EVENT_NSID) : options.verifyServiceAuth!(authorization)

  return async (req) => {
    try {
      let iss: string
      try {
        const authorization = singleHeader(req.headers, 'authorization', 'InvalidSignature')
        // a token naming another issuer is refused before the verifier resolves that issuer's key (a DID document
        // fetched from a host the caller picked) or spends its jti
        const claimed = unverifiedIssuer(authorization)
        if (claimed !== undefined && claimed !== options.serviceDid) throw new ReceiverError('InvalidSignature', 'service-auth issuer is not the service')
        iss = (await authenticate(authorization)).iss
      } catch (err) {
        if (err instanceof ReceiverError) throw err
        // The verifier refuses with a ContractError (401); anything else from it (e.g. Redis down) is a 500.
        if (options.verifier && !(err instanceof Error && err.name === 'ContractError')) throw err
        const code = (err as { code?: unknown }).code
        // not a forgery: the service's DID document could not be fetched just now (the delivery is retried)
        if (code === 'ServiceUnavailable') throw new ReceiverError('ServiceUnavailable', "the service's DID document could not be fetched just now to check its service-auth; the service retries", { cause: err })
        throw new ReceiverError('InvalidSignature', `service-auth refused${typeof code === 'string' ? ` (${code})` : ''}`, { cause: err })
      }
      if (iss !== options.serviceDid) throw new ReceiverError('InvalidSignature', 'service-auth issuer is not the service')

      if (keys) {
        if (typeof req.body !== 'string' && !(req.body instanceof Uint8Array)) throw new TypeError('with signing secrets, give receiveEvent the raw body (string or Buffer)')
        const envelope = verifyWebhookWithKeys(keys, { rawBody: req.body, headers: req.headers, toleranceSeconds: options.toleranceSeconds, now: options.now?.() })
        await handleDelivery({ ...options, envelope })
        return { status: 200, body: { ok: true } }
      }
      let body = req.body
      if (typeof body === 'string' || body instanceof Uint8Array) {
        try {
          body = JSON.parse(Buffer.from(body).toString('utf8'))
        } catch {
          throw new ReceiverError('InvalidEnvelope', 'the body is not JSON')
        }
      }
      assertEnvelope(body)
      const deliveryId = singleHeader(req.headers, DELIVERY_ID_HEADER, 'InvalidEnvelope')
      if (deliveryId !== undefined && deliveryId !== body.id) throw new ReceiverError('InvalidEnvelope', 'Svc-Delivery-Id does not match the envelope id')
      // the service sends both headers on every delivery; a call without them is not one of its deliveries
      if (deliveryId === undefined) throw new ReceiverError('InvalidEnvelope', 'the Svc-Delivery-Id header is required')
      assertApiVersion(body, singleHeader(req.headers, API_VERSION_HEADER, 'ApiVersionMismatch'), true)
      await handleDelivery({ ...options, envelope: body })
      return { status: 200, body: { ok: true } }
    } catch (err) {
      return errorResponse(err, (e) => (e.code === 'InvalidSignature' ? 401 : e.status), options.onError)
    }
  }
}
