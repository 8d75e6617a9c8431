/**
 * The internal context the gateway signs and every subgraph verifies.
 * Header `svc-context: <base64url(JSON payload)>.<base64url(HMAC-SHA256)>`; a subgraph refuses
 * any request without a valid, unexpired one, so subgraphs cannot be called around the gateway.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Environment } from '@svc/vocabulary'

export const CONTEXT_HEADER = 'svc-context'
export const REQUEST_ID_HEADER = 'svc-request-id'

/** Who is calling, as established by the gateway (and, for apps, by the XRPC adapter's verification). */
export type Principal =
  /** an app backend whose service-auth JWT the adapter verified */
  | { kind: 'app'; appDid: string }
  /** a developer utility call bearing a restricted API key; the apps subgraph checks the key itself */
  | { kind: 'apiKey'; keyHash: string }
  /** an internal service acting on its own behalf (the adapter writing the request log) */
  | { kind: 'service'; name: string }
  /** an operator or internal dashboard */
  | { kind: 'operator'; id: string }
  /** a creator signed in to the dashboard (a session the adapter checked): a human acting for one actor in one environment */
  | { kind: 'dashboard'; actorDid: string; environment: Environment; sessionId: string }
  /** the gateway itself (schema composition) */
  | { kind: 'gateway' }

export interface InternalContext {
  principal: Principal
  requestId: string
  /** unix seconds */
  exp: number
}

const LIFETIME_SECONDS = 60

function mac(secret: string, body: string): Buffer {
  return createHmac('sha256', secret).update(body).digest()
}

export function signContext(secret: string, ctx: { principal: Principal; requestId: string }, now = Date.now()): string {
  const payload: InternalContext = { ...ctx, exp: Math.floor(now / 1000) + LIFETIME_SECONDS }
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url')
  return `${body}.${mac(secret, body).toString('base64url')}`
}

export type ContextFailure = 'missing' | 'malformed' | 'bad-signature' | 'expired'

export function verifyContext(
  secret: string,
  header: string | undefined,
  now = Date.now(),
): { ok: true; context: InternalContext } | { ok: false; reason: ContextFailure } {
  if (!header) return { ok: false, reason: 'missing' }
  const [body, sig, extra] = header.split('.')
  if (!body || !sig || extra !== undefined) return { ok: false, reason: 'malformed' }
  const expected = mac(secret, body)
  const given = Buffer.from(sig, 'base64url')
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad-signature' }
  let payload: InternalContext
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as InternalContext
  } catch {
    return { ok: false, reason: 'malformed' }
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return { ok: false, reason: 'malformed' }
  if (typeof payload.exp !== 'number' || payload.exp < Math.floor(now / 1000)) return { ok: false, reason: 'expired' }
  if (!payload.principal || typeof payload.requestId !== 'string') return { ok: false, reason: 'malformed' }
  return { ok: true, context: payload }
}
