/**
 * Dashboard sessions: how a creator (an actor, in one environment) is signed in to the dashboard pages on
 * {checkout_url}/dashboard. The contract's "dashboard session" is the only credential that may accept an
 * app's terms; no JWT or API key ever becomes one.
 *
 * A session starts from a single-use sign-in link (`dsl_…`, 15 minutes), the way Stripe's Express dashboard
 * login links work: the operator command prints one (production would issue it after an atproto OAuth
 * sign-in). Redeeming it (atomic GETDEL, so a link works once even under concurrent clicks) sets an HttpOnly
 * cookie holding a random session secret (`dss_…`, 12 hours). Redis keeps only SHA-256 hashes of both,
 * with their TTLs, so a leaked Redis dump opens nothing. Each session carries a CSRF secret that every
 * dashboard form posts back. On an https checkout host the cookies are `__Host-` prefixed (dashboardCookie).
 *
 * An operator ends every session and unused sign-in link of an actor at once (endSessions, after a lost device or
 * a leaked link): each actor has a sign-out generation, a Redis counter; sessions and links carry the one they were
 * made in, and one made before the counter's last increment opens nothing (no clocks compared).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type Redis from 'ioredis'
import type { Environment } from '@svc/vocabulary'

/** The session cookie's name over plain http (local development, the e2e stack); see dashboardCookie. */
export const DASHBOARD_COOKIE = 'svc_dashboard'
/** The sign-in page's nonce cookie's name over plain http; see dashboardCookie. */
export const DASHBOARD_LOGIN_COOKIE = 'svc_dashboard_login'
export const LOGIN_LINK_TTL_SECONDS = 15 * 60
export const SESSION_TTL_SECONDS = 12 * 3600

export interface DashboardCookie {
  name: string
  /** the attributes it is set with, and cleared with (a browser drops a `__Host-` cookie's clearing without Secure and Path=/) */
  options: { path: string; httpOnly: true; sameSite: 'lax' | 'strict'; secure: boolean; maxAge: number }
}

/**
 * The name and attributes of a dashboard cookie, for setting, reading and clearing it alike: the session
 * (SameSite=Lax, 12 hours) or the sign-in page's nonce (SameSite=Strict, 15 minutes).
 *
 * When the checkout host is https (`secure`) the name is `__Host-` prefixed, which a browser accepts only with
 * Secure, Path=/ and no Domain: a sibling subdomain (same-site, so SameSite does not stop it) cannot plant one
 * with `Domain=.parent`, so it can neither toss its own sign-in nonce in (login CSRF with its own link) nor fix a
 * session. Only this name is read then: an unprefixed cookie, which any sibling could have set, is ignored. The
 * prefix requires Path=/, so the cookies also go with /checkout and /xrpc requests (request logs never record
 * headers; the logger redacts a Cookie header anyway). Over plain http (local development, the e2e stack) a
 * browser would refuse a `__Host-` cookie: the plain names and the /dashboard paths stay.
 */
export function dashboardCookie(kind: 'session' | 'login', secure: boolean): DashboardCookie {
  const { name, path, sameSite, maxAge } =
    kind === 'session'
      ? { name: DASHBOARD_COOKIE, path: '/dashboard', sameSite: 'lax' as const, maxAge: SESSION_TTL_SECONDS }
      : { name: DASHBOARD_LOGIN_COOKIE, path: '/dashboard/login', sameSite: 'strict' as const, maxAge: LOGIN_LINK_TTL_SECONDS }
  return secure
    ? { name: `__Host-${name}`, options: { path: '/', httpOnly: true, sameSite, secure: true, maxAge } }
    : { name, options: { path, httpOnly: true, sameSite, secure: false, maxAge } }
}

export interface DashboardSession {
  actorDid: string
  environment: Environment
  /** a public identifier of the session (a prefix of its hash), for logs and the gateway principal */
  sessionId: string
  /** posted back by every dashboard form */
  csrfToken: string
  createdAt: string
  /** the actor's sign-out generation when the session began (absent on sessions from before generations: 0) */
  generation?: number
}

export interface DashboardSessions {
  issueLoginLink(who: { actorDid: string; environment: Environment }): Promise<{ token: string; expiresAt: Date }>
  /** whom a sign-in link would sign in, without spending it; null when it is unknown, used or expired */
  peekLoginLink(token: string): Promise<{ actorDid: string; environment: Environment } | null>
  /** the session started by a sign-in link, once; null when the link is unknown, used or expired */
  redeemLoginLink(token: string): Promise<{ cookie: string; session: DashboardSession } | null>
  createSession(who: { actorDid: string; environment: Environment }): Promise<{ cookie: string; session: DashboardSession }>
  getSession(cookie: string | undefined): Promise<DashboardSession | null>
  destroySession(cookie: string | undefined): Promise<void>
  /** ends every session and unused sign-in link of the actor in that environment (sign-ins after it work) */
  endSessions(who: { actorDid: string; environment: Environment }): Promise<void>
}

/**
 * A page of this dashboard (`/dashboard`, `/dashboard/onboarding/apr_…`): the only places a sign-in link or a
 * dashboard form may lead to, never another origin or a path with dots.
 */
export function isDashboardPath(value: unknown): value is string {
  return typeof value === 'string' && /^\/dashboard(\/[A-Za-z0-9_/-]*)?$/.test(value)
}

/** The sign-in URL of a link token under the dashboard's public URL, opening `next` (a dashboard path) when given. */
export function signInUrl(dashboardUrl: string, token: string, next?: string): string {
  return `${dashboardUrl}/login/${token}${next ? `?next=${encodeURIComponent(next)}` : ''}`
}

const LOGIN_RE = /^dsl_[A-Za-z0-9_-]{43}$/
const SESSION_RE = /^dss_[A-Za-z0-9_-]{43}$/

const sha256 = (value: string) => createHash('sha256').update(value).digest('hex')
const secret = (prefix: string) => `${prefix}${randomBytes(32).toString('base64url')}`

/** Constant-time comparison of a posted CSRF token with the session's. */
export function csrfMatches(session: DashboardSession, posted: unknown): boolean {
  if (typeof posted !== 'string') return false
  const a = createHash('sha256').update(posted).digest()
  const b = createHash('sha256').update(session.csrfToken).digest()
  return timingSafeEqual(a, b)
}

interface Who {
  actorDid: string
  environment: Environment
  /** the actor's sign-out generation when the link or session was made */
  generation: number
}

function parseWho(raw: string | null): Who | null {
  if (!raw) return null
  try {
    const v = JSON.parse(raw) as { actorDid?: unknown; environment?: unknown; generation?: unknown }
    const generation = v.generation === undefined ? 0 : v.generation
    if (typeof v.actorDid === 'string' && (v.environment === 'test' || v.environment === 'live') && Number.isSafeInteger(generation)) {
      return { actorDid: v.actorDid, environment: v.environment, generation: generation as number }
    }
  } catch {
    // a malformed entry opens nothing
  }
  return null
}

export function createDashboardSessions(opts: { redis: Redis; prefix: string; sessionTtlSeconds?: number; loginTtlSeconds?: number }): DashboardSessions {
  const { redis, prefix } = opts
  const sessionTtl = opts.sessionTtlSeconds ?? SESSION_TTL_SECONDS
  const loginTtl = opts.loginTtlSeconds ?? LOGIN_LINK_TTL_SECONDS
  const loginKey = (token: string) => `${prefix}login:${sha256(token)}`
  const sessionKey = (cookie: string) => `${prefix}session:${sha256(cookie)}`
  // never expires: a counter that went back to 0 would let a later end miss sessions made after an earlier one
  const generationKey = (who: { actorDid: string; environment: Environment }) => `${prefix}generation:${who.environment}:${who.actorDid}`
  const generationOf = async (who: { actorDid: string; environment: Environment }) => Number((await redis.get(generationKey(who))) ?? 0)
  /** whether the actor's sessions were ended after this link or session was made */
  const ended = async (who: Who) => who.generation < (await generationOf(who))

  /** a session in the actor's generation now, or in its sign-in link's: an end after the link was made ends it too */
  async function createSession(who: { actorDid: string; environment: Environment; generation?: number }) {
    const cookie = secret('dss_')
    const session: DashboardSession = {
      actorDid: who.actorDid,
      environment: who.environment,
      sessionId: `ses_${sha256(cookie).slice(0, 16)}`,
      csrfToken: randomBytes(24).toString('base64url'),
      createdAt: new Date().toISOString(),
      // read before the session is written: an end between the two ends this session too
      generation: who.generation ?? (await generationOf(who)),
    }
    await redis.set(sessionKey(cookie), JSON.stringify(session), 'EX', sessionTtl)
    return { cookie, session }
  }

  return {
    async issueLoginLink(who) {
      if (!who.actorDid.startsWith('did:')) throw new Error('actorDid must be a DID')
      const token = secret('dsl_')
      const link: Who = { actorDid: who.actorDid, environment: who.environment, generation: await generationOf(who) }
      await redis.set(loginKey(token), JSON.stringify(link), 'EX', loginTtl)
      return { token, expiresAt: new Date(Date.now() + loginTtl * 1000) }
    },
    async peekLoginLink(token) {
      if (!LOGIN_RE.test(token)) return null
      const who = parseWho(await redis.get(loginKey(token)))
      return who && !(await ended(who)) ? { actorDid: who.actorDid, environment: who.environment } : null
    },
    async redeemLoginLink(token) {
      if (!LOGIN_RE.test(token)) return null
      const who = parseWho(await redis.get(loginKey(token)))
      if (!who || (await ended(who))) return null
      // the session first, then the link is spent: a failure in between (Redis away) leaves the link for a retry.
      // Single use all the same: of concurrent redeemers only the one whose delete removed the link keeps its session
      const started = await createSession(who)
      if ((await redis.del(loginKey(token))) === 1) return started
      await redis.del(sessionKey(started.cookie))
      return null
    },
    createSession,
    async getSession(cookie) {
      if (!cookie || !SESSION_RE.test(cookie)) return null
      const raw = await redis.get(sessionKey(cookie))
      if (!raw) return null
      let s: DashboardSession
      try {
        s = JSON.parse(raw) as DashboardSession
      } catch {
        return null
      }
      const who = parseWho(raw)
      if (!who || typeof s.sessionId !== 'string' || typeof s.csrfToken !== 'string') return null
      return (await ended(who)) ? null : s
    },
    async destroySession(cookie) {
      if (cookie && SESSION_RE.test(cookie)) await redis.del(sessionKey(cookie))
    },
    async endSessions(who) {
      await redis.incr(generationKey(who))
    },
  }
}
