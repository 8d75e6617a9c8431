/**
 * The signed internal context: who is calling, stated once by the process that established it and verified by the
 * gateway and again by the subgraph that serves the request (subgraphs cannot be called around it).
 *
 * Header `svc-context: <issuer>.<base64url(JSON payload)>.<base64url(HMAC-SHA256 of "<issuer>.<payload>")>`, signed
 * with the issuing process's own key. Each issuer may state only the principals `mayAssert` gives it: the XRPC
 * adapter speaks for the apps it verified, API keys, dashboard sessions, itself and its checkout pages; the events
 * workers, payments and apps are only themselves; the gateway states operators (its bearer credential) and itself.
 * A context lives 60 seconds.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { isDid, isEnvironment, SERVICE_PRINCIPALS, type Environment } from '@svc/vocabulary'

export const CONTEXT_HEADER = 'svc-context'
export const REQUEST_ID_HEADER = 'svc-request-id'

/** Who is calling. */
export type Principal =
  /** an app backend whose service-auth JWT the adapter verified */
  | { kind: 'app'; appDid: string }
  /** a developer utility call bearing a restricted API key; the apps subgraph checks the key itself */
  | { kind: 'apiKey'; keyHash: string }
  /** an internal service acting on its own behalf */
  | { kind: 'service'; name: string }
  /** an operator or internal dashboard */
  | { kind: 'operator'; id: string }
  /** a creator signed in to the dashboard (a session the adapter checked): a human acting for one actor in one environment */
  | { kind: 'dashboard'; actorDid: string; environment: Environment; sessionId: string }
  /** the gateway itself (schema composition) */
  | { kind: 'gateway' }

/** The processes that sign contexts, each with its own key. */
export const ISSUERS = ['gateway', 'xrpc-adapter', 'events', 'payments', 'apps', 'tickets'] as const
export type Issuer = (typeof ISSUERS)[number]
/**
 * Every issuer's key: the gateway and every subgraph hold them to verify; a process that only calls holds (and signs
 * with) its own only. During
 * a rotation an issuer's key before it (`previous`) still verifies (docs/architecture.md, "Rotating a context key").
 */
export type CallerKeys = Readonly<Record<Issuer, string>> & { readonly previous?: Readonly<Partial<Record<Issuer, string>>> }
/** What a process signs with. */
export interface ContextSigner {
  issuer: Issuer
  key: string
}

export interface InternalContext {
  issuer: Issuer
  principal: Principal
  requestId: string
  /** unix seconds */
  exp: number
}

const LIFETIME_SECONDS = 60
/** How far ahead of the verifier a signer's clock may run: a context that outlives that is refused, whoever signed it. */
const CLOCK_AHEAD_SECONDS = 60
const ADAPTER_SERVICES: readonly string[] = [SERVICE_PRINCIPALS.xrpcAdapter, SERVICE_PRINCIPALS.checkout]

/** The principals each issuer may state: a process can never speak for a caller it did not authenticate. */
export function mayAssert(issuer: Issuer, principal: Principal): boolean {
  switch (issuer) {
    case 'gateway':
      return principal.kind === 'operator' || principal.kind === 'gateway'
    case 'xrpc-adapter':
      return principal.kind === 'app' || principal.kind === 'apiKey' || principal.kind === 'dashboard' || (principal.kind === 'service' && ADAPTER_SERVICES.includes(principal.name))
    case 'events':
    case 'payments':
    case 'apps':
    case 'tickets':
      return principal.kind === 'service' && principal.name === SERVICE_PRINCIPALS[issuer]
  }
}

function isIssuer(value: string): value is Issuer {
  return (ISSUERS as readonly string[]).includes(value)
}

/** A principal of the right shape (DIDs checked, environments known), or null. */
export function parsePrincipal(value: unknown): Principal | null {
  if (typeof value !== 'object' || value === null) return null
  const v = value as Record<string, unknown>
  switch (v.kind) {
    case 'app':
      return typeof v.appDid === 'string' && isDid(v.appDid) ? { kind: 'app', appDid: v.appDid } : null
    case 'apiKey':
      return typeof v.keyHash === 'string' && /^[0-9a-f]{64}$/.test(v.keyHash) ? { kind: 'apiKey', keyHash: v.keyHash } : null
    case 'service':
      return typeof v.name === 'string' ? { kind: 'service', name: v.name } : null
    case 'operator':
      return typeof v.id === 'string' && /^[\w.@-]{1,64}$/.test(v.id) ? { kind: 'operator', id: v.id } : null
    case 'dashboard':
      return typeof v.actorDid === 'string' && isDid(v.actorDid) && isEnvironment(v.environment) && typeof v.sessionId === 'string'
        ? { kind: 'dashboard', actorDid: v.actorDid, environment: v.environment, sessionId: v.sessionId }
        : null
    case 'gateway':
      return { kind: 'gateway' }
    default:
      return null
  }
}

function mac(key: string, signed: string): Buffer {
  return createHmac('sha256', key).update(signed).digest()
}

export function signContext(signer: ContextSigner, ctx: { principal: Principal; requestId: string }, now = Date.now()): string {
  if (!mayAssert(signer.issuer, ctx.principal)) throw new Error(`${signer.issuer} may not sign for a ${ctx.principal.kind} principal`)
  const payload = { principal: ctx.principal, requestId: ctx.requestId, exp: Math.floor(now / 1000) + LIFETIME_SECONDS }
  const signed = `${signer.issuer}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`
  return `${signed}.${mac(signer.key, signed).toString('base64url')}`
}

export type ContextFailure = 'missing' | 'malformed' | 'unknown-issuer' | 'bad-signature' | 'expired' | 'lifetime' | 'not-allowed'

export function verifyContext(
  keys: CallerKeys,
  header: string | undefined,
  now = Date.now(),
): { ok: true; context: InternalContext } | { ok: false; reason: ContextFailure } {
  if (!header) return { ok: false, reason: 'missing' }
  const [issuer, body, sig, extra] = header.split('.')
  if (!issuer || !body || !sig || extra !== undefined) return { ok: false, reason: 'malformed' }
  if (!isIssuer(issuer)) return { ok: false, reason: 'unknown-issuer' }
  const given = Buffer.from(sig, 'base64url')
  const signedBy = (key: string | undefined) => {
    if (!key) return false
    const expected = mac(key, `${issuer}.${body}`)
    return given.length === expected.length && timingSafeEqual(given, expected)
  }
  if (!signedBy(keys[issuer]) && !signedBy(keys.previous?.[issuer])) return { ok: false, reason: 'bad-signature' }
  let payload: Record<string, unknown>
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>
  } catch {
    return { ok: false, reason: 'malformed' }
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return { ok: false, reason: 'malformed' }
  if (typeof payload.exp !== 'number' || payload.exp < Math.floor(now / 1000)) return { ok: false, reason: 'expired' }
  // a context lives one request: one that would live longer (signed by hand with the key, say) never passes
  if (payload.exp > Math.floor(now / 1000) + LIFETIME_SECONDS + CLOCK_AHEAD_SECONDS) return { ok: false, reason: 'lifetime' }
  const principal = parsePrincipal(payload.principal)
  if (!principal || typeof payload.requestId !== 'string') return { ok: false, reason: 'malformed' }
  if (!mayAssert(issuer, principal)) return { ok: false, reason: 'not-allowed' }
  return { ok: true, context: { issuer, principal, requestId: payload.requestId, exp: payload.exp } }
}
