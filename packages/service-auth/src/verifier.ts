/**
 * Verifies AT Protocol inter-service JWTs (`Authorization: Bearer <jwt>`), DESIGN.md section 4:
 * alg ES256K or ES256, `aud` = our DID, `lxm` = the NSID called, `exp` not passed and at most
 * `maxLifetimeSeconds` (+ skew) ahead, `iat` and `jti` present, signature by the issuer's `#atproto`
 * key (did:key locally, did:web, did:plc), and `jti` single-use in Redis until `exp`.
 *
 * Every refusal is a ContractError (401). Tokens are never logged nor echoed in messages.
 */
import { Agent, fetch, type Response } from 'undici'
import { AddressRefusedError, createGuardedAgent, isLoopbackAddress, isNonPublicAddress } from '@svc/webhook-url'
import { nativeKey, verifySignatureNatively } from './native-signature'
import { DidPlcResolver, DidResolver, DidWebResolver, type CacheResult, type DidCache, type DidDocument } from '@atproto/identity'
import { AuthRequiredError, verifyJwt } from '@atproto/xrpc-server'
import { ContractError, type ErrorCode } from '@svc/errors'
import { isDid } from '@svc/vocabulary'
import type { Redis } from 'ioredis'
import { LRUCache } from 'lru-cache'

import { SERVICE_JWT_ALGS } from './mint'

export interface VerifiedServiceAuth {
  iss: string
  aud: string
  lxm: string
  jti: string
  exp: number
  iat: number
  /** whether this verification spent the `jti` (false: a retry of its scope, accepted again) */
  firstUse: boolean
}

export interface VerifyOptions {
  /**
   * A `jti` seen before is accepted again for the same scope only (a buyer's assertion sent again with the retry of
   * one idempotent request); without it, a `jti` is single-use.
   */
  replayScope?: string
  /** The DID the token must be issued by: another is refused before anything is resolved or its `jti` spent. */
  issuer?: string
}

export interface ServiceAuthVerifier {
  /** `authorization`: the raw header value; `nsid`: the method being served. Throws ContractError. */
  verify(authorization: string | undefined, nsid: string, opts?: VerifyOptions): Promise<VerifiedServiceAuth>
  /**
   * The issuer whose DID document verifying this header would fetch over the network (a did:plc or did:web not
   * cached, nor found unresolvable within UNRESOLVABLE_ISSUER_TTL_MS), or null (no such issuer, a did:key, a cached
   * one, not a JWT at all): what a caller may count before it verifies. Never throws.
   */
  issuerToLookUp(authorization: string | undefined): Promise<string | null>
  /**
   * Gives a scoped token's `jti` back, while it is still spent for that scope: its request was refused for its input
   * and did nothing, so the corrected request may carry it (in another scope). Call only after `firstUse`.
   */
  releaseReplay(verified: VerifiedServiceAuth, replayScope: string): Promise<void>
}

export interface ServiceAuthVerifierOptions {
  /** This service's DID: the required `aud`. */
  serviceDid: string
  /** PLC directory base URL for did:plc issuers, e.g. https://plc.directory. */
  plcUrl: string
  redis: Redis
  /** Prefix of the replay keys `<prefix><iss>:<jti>`. */
  replayKeyPrefix: string
  /** Longest accepted `exp - now`, seconds. Default 300. */
  maxLifetimeSeconds?: number
  /** Tolerated clock difference, seconds. Default 30. */
  clockSkewSeconds?: number
  /** How long a resolved DID document is reused, ms. Default 10 minutes. */
  didCacheTtlMs?: number
  /** How many issuers' DID documents are kept, the least recently used going first. Default 10,000. */
  didCacheMax?: number
  /** DID resolution timeout, ms. Default 3000. */
  didTimeoutMs?: number
  /** Tests only: resolve did:web over plain http for localhost / 127.0.0.1 / [::1]. Otherwise those hosts are refused. */
  allowInsecureDidWeb?: boolean
  /** Replaces the built-in resolver (then didCacheTtlMs, didTimeoutMs, plcUrl and allowInsecureDidWeb do not apply to it). */
  resolver?: DidResolver
}

/** The longest `exp - now` a verifier accepts by default: what minting a token for the service may ask for. */
export const DEFAULT_MAX_LIFETIME_SECONDS = 300
const DEFAULT_CLOCK_SKEW_SECONDS = 30
const DEFAULT_DID_CACHE_TTL_MS = 10 * 60 * 1000
const DEFAULT_DID_TIMEOUT_MS = 3000
const DEFAULT_DID_CACHE_MAX = 10_000
/** A DID document larger than this is refused: one is a few hundred bytes. */
const MAX_DID_DOCUMENT_BYTES = 16 * 1024
/** The cached documents' total size (their JSON text), whatever their number. */
const DID_CACHE_MAX_BYTES = 32 * 1024 * 1024
/** A forced key refetch (after a signature mismatch) happens at most this often per issuer. */
const FORCED_REFRESH_MIN_INTERVAL_MS = 30 * 1000
/**
 * And at most this many a minute in all, whichever issuers: forged tokens naming issuers already cached (no lookup for
 * the address's limit to count) would otherwise make one refetch per issuer every 30 s, thousands a second across a
 * full cache. A key rotated while the budget is spent is read when its cached document expires (10 minutes).
 */
export const FORCED_REFRESHES_PER_MINUTE = 60
/**
 * How long an issuer found unresolvable (no such DID, or no usable key in its document) is answered so without
 * asking again: forged tokens naming one made-up DID, sent again and again, would otherwise each make a lookup.
 */
export const UNRESOLVABLE_ISSUER_TTL_MS = 60 * 1000
const MAX_TOKEN_LENGTH = 8192
const MAX_JTI_LENGTH = 256
const MAX_ISS_LENGTH = 2048

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/
const BEARER = /^Bearer +(\S+) *$/i
/** Printable ASCII without spaces: keeps replay keys well-formed. */
const JTI_SHAPE = /^[\x21-\x7e]+$/

/** verifyJwt's error names that are contract codes as they are. */
const PASSTHROUGH_CODES = new Set<ErrorCode>(['BadJwt', 'JwtExpired', 'BadJwtAudience', 'BadJwtLexiconMethod', 'BadJwtSignature'])

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * did:web over https only; plain http for loopback hosts only when allowed (tests), else loopback is refused. The
 * host is the caller's choice (a token's `iss`, checked before its signature can be), so every connection goes only
 * to a public address: a forged token naming `did:web:10.0.0.5%3A8443`, or a name resolving to the metadata service,
 * makes no connection inside.
 */
class GuardedDidWebResolver extends DidWebResolver {
  private readonly allowInsecure: boolean
  private readonly dispatcher: Agent

  constructor(timeout: number, allowInsecure: boolean) {
    super(timeout)
    this.allowInsecure = allowInsecure
    this.dispatcher = createGuardedAgent(
      {
        allowed: (ip) => (isLoopbackAddress(ip) ? allowInsecure : !isNonPublicAddress(ip)),
        refusal: (host, address) => new AddressRefusedError(`did:web host ${host} is not a public address (${address})`),
      },
      timeout,
    )
  }

  override async resolveNoCheck(did: string): Promise<unknown> {
    const id = did.split(':').slice(2).join(':')
    const parts = id.split(':').map(decodeURIComponent)
    if (parts.length !== 1 || !parts[0] || /[/?#@\\]/.test(parts[0])) {
      throw new Error('unsupported did:web identifier')
    }
    const url = new URL(`https://${parts[0]}/.well-known/did.json`)
    if (LOOPBACK_HOSTS.has(url.hostname)) {
      if (!this.allowInsecure) throw new Error('loopback did:web hosts are not allowed')
      url.protocol = 'http:'
    }
    const res = await fetch(url, {
      signal: AbortSignal.timeout(this.timeout),
      redirect: 'error',
      headers: { accept: 'application/did+ld+json,application/json' },
      dispatcher: this.dispatcher,
    })
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined)
      // a host that fails for now (lookupUnavailable: a retry may pass), against one that has no document
      if (res.status >= 500 || res.status === 429) throw Object.assign(new Error(`the did:web host answered ${res.status}`), { status: res.status })
      return null
    }
    return JSON.parse(await boundedText(res, MAX_DID_DOCUMENT_BYTES))
  }
}

/**
 * did:plc documents from the PLC directory, bounded like did:web ones: the directory is the operator's choice, but
 * what it serves for a DID is the DID owner's, and a token names any DID before its signature is checked.
 */
class BoundedDidPlcResolver extends DidPlcResolver {
  override async resolveNoCheck(did: string): Promise<unknown> {
    let res: Response
    try {
      res = await fetch(new URL(`/${encodeURIComponent(did)}`, this.plcUrl), {
        signal: AbortSignal.timeout(this.timeout),
        redirect: 'error',
        headers: { accept: 'application/did+ld+json,application/json' },
      })
    } catch (err) {
      // no answer from the directory the service is configured with, its name not resolving included (a DNS outage
      // is the service's, not a sign that the DID does not exist, as a did:web host's unknown name is)
      throw Object.assign(new Error(`the PLC directory could not be reached: ${(err as Error).message}`), { cause: err, unreachable: true })
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined)
      // positively unknown, against a directory that failed
      if (res.status === 404) return null
      throw Object.assign(new Error(`the PLC directory answered ${res.status}`), { status: res.status })
    }
    return JSON.parse(await boundedText(res, MAX_DID_DOCUMENT_BYTES))
  }
}

/** Connection failures worth a retry: the host or the directory is away for now (not a did:web name that does not exist; the PLC directory not reached at all, its name included, is flagged `unreachable`). */
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED'])

/**
 * Whether a key lookup failed on the way rather than on its answer: no answer in time, a connection refused or cut,
 * the directory's 5xx or 429, the PLC directory not reached at all. The caller may retry such a call (503); a DID that
 * is not there, a document that is not one, a did:web name that does not resolve or an address refused stay
 * UnresolvableIssuer (401).
 */
function lookupUnavailable(err: unknown): boolean {
  const e = err as { name?: unknown; status?: unknown; code?: unknown; unreachable?: unknown; cause?: { code?: unknown; name?: unknown } } | null
  if (!e) return false
  if (e.unreachable === true) return true
  if (e.name === 'TimeoutError' || e.cause?.name === 'TimeoutError') return true
  if (typeof e.status === 'number' && (e.status >= 500 || e.status === 429)) return true
  const code = e.code ?? e.cause?.code
  return typeof code === 'string' && UNAVAILABLE_CODES.has(code)
}

/** The body as text, refused past `max` bytes (announced or sent): the host is the caller's choice. */
async function boundedText(res: Response, max: number): Promise<string> {
  if (Number(res.headers.get('content-length') ?? 0) > max) {
    await res.body?.cancel().catch(() => undefined)
    throw new Error('the DID document is too large')
  }
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength
    if (size > max) throw new Error('the DID document is too large')
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * The issuers' DID documents, at most `max` of them and DID_CACHE_MAX_BYTES in all, the least recently used going
 * first (any caller names an issuer, and a document is cached before its signature is checked, so an unbounded cache
 * is a way to fill memory); one past `ttlMs` is refetched, never used stale.
 */
class BoundedDidCache implements DidCache {
  private readonly docs: LRUCache<string, { doc: DidDocument; updatedAt: number; bytes: number }>

  constructor(
    private readonly ttlMs: number,
    max: number,
  ) {
    this.docs = new LRUCache({ max, maxSize: DID_CACHE_MAX_BYTES, sizeCalculation: (entry) => entry.bytes })
  }

  async cacheDid(did: string, doc: DidDocument): Promise<void> {
    this.docs.set(did, { doc, updatedAt: Date.now(), bytes: Math.max(1, JSON.stringify(doc).length) })
  }

  async checkCache(did: string): Promise<CacheResult | null> {
    const cached = this.docs.get(did)
    if (!cached) return null
    const expired = Date.now() > cached.updatedAt + this.ttlMs
    return { doc: cached.doc, updatedAt: cached.updatedAt, did, stale: expired, expired }
  }

  async refreshCache(did: string, getDoc: () => Promise<DidDocument | null>): Promise<void> {
    const doc = await getDoc()
    if (doc) await this.cacheDid(did, doc)
  }

  async clearEntry(did: string): Promise<void> {
    this.docs.delete(did)
  }

  async clear(): Promise<void> {
    this.docs.clear()
  }
}

function buildResolver(options: ServiceAuthVerifierOptions): DidResolver {
  if (options.resolver) return options.resolver
  const timeout = options.didTimeoutMs ?? DEFAULT_DID_TIMEOUT_MS
  const ttl = options.didCacheTtlMs ?? DEFAULT_DID_CACHE_TTL_MS
  // stale = expired: a cached document is either used as is or refetched, never refreshed in-line.
  const didCache = new BoundedDidCache(ttl, options.didCacheMax ?? DEFAULT_DID_CACHE_MAX)
  const resolver = new DidResolver({ plcUrl: options.plcUrl, timeout, didCache })
  resolver.methods.set('web', new GuardedDidWebResolver(timeout, options.allowInsecureDidWeb === true))
  resolver.methods.set('plc', new BoundedDidPlcResolver(options.plcUrl, timeout))
  return resolver
}

function fail(code: ErrorCode, message: string): never {
  throw new ContractError(code, message)
}

function decodeJsonObject(part: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'))
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

/** The JWT of a `Bearer` header, or a ContractError naming what was sent instead. */
function extractJwt(authorization: string | undefined): string {
  const raw = authorization?.trim()
  if (!raw) fail('AuthMissing', 'authorization required: a service-auth JWT in Authorization: Bearer')
  const bearer = BEARER.exec(raw)
  const credential = bearer?.[1] ?? raw
  if (credential.startsWith('svc_rk_')) {
    fail('ApiKeyNotAccepted', 'API keys are accepted only on the developer utility routes')
  }
  if (credential.startsWith('whsec_')) {
    fail('WebhookSecretNotAccepted', 'webhook signing secrets are not credentials')
  }
  if (!bearer) fail('BadJwt', 'expected Authorization: Bearer <service-auth JWT>')
  if (credential.length > MAX_TOKEN_LENGTH) fail('BadJwt', `the JWT is longer than ${MAX_TOKEN_LENGTH} characters`)
  if (!JWT_SHAPE.test(credential)) fail('BadJwt', 'not a JWT: three base64url parts separated by dots')
  return credential
}

export function createServiceAuthVerifier(options: ServiceAuthVerifierOptions): ServiceAuthVerifier {
  const { serviceDid, redis, replayKeyPrefix } = options
  const maxLifetime = options.maxLifetimeSeconds ?? DEFAULT_MAX_LIFETIME_SECONDS
  const skew = options.clockSkewSeconds ?? DEFAULT_CLOCK_SKEW_SECONDS
  const resolver = buildResolver(options)
  /** issuers whose key was refetched lately (after a signature mismatch) */
  const forcedRefreshes = new LRUCache<string, true>({ max: 10_000, ttl: FORCED_REFRESH_MIN_INTERVAL_MS })
  /** issuers found unresolvable lately (a directory or host failing for now is not remembered: the app retries) */
  const unresolvable = new LRUCache<string, true>({ max: 10_000, ttl: UNRESOLVABLE_ISSUER_TTL_MS })
  const unresolvableIssuer: () => never = () => fail('UnresolvableIssuer', 'could not resolve the signing key of the jwt issuer')

  /** when the forced refetches of the last minute were made (oldest first) */
  const lastMinuteRefreshes: number[] = []

  /** Throttles forced refetches so bad signatures cannot make us hammer an issuer's DID host, nor the directory. */
  function mayForceRefresh(did: string): boolean {
    if (forcedRefreshes.has(did)) return false
    const now = Date.now()
    while (lastMinuteRefreshes.length > 0 && lastMinuteRefreshes[0]! <= now - 60_000) lastMinuteRefreshes.shift()
    if (lastMinuteRefreshes.length >= FORCED_REFRESHES_PER_MINUTE) return false
    lastMinuteRefreshes.push(now)
    forcedRefreshes.set(did, true)
    return true
  }

  async function getSigningKey(iss: string, forceRefresh: boolean): Promise<string> {
    if (unresolvable.has(iss)) unresolvableIssuer()
    let key: string
    try {
      key = await resolver.resolveAtprotoKey(iss, forceRefresh && mayForceRefresh(iss))
      nativeKey(key) // a usable key, parsed once per key (not on every request: point decompression is costly)
    } catch (err) {
      if (lookupUnavailable(err)) fail('ServiceUnavailable', "the jwt issuer's DID document could not be fetched just now (its host or the PLC directory did not answer); retry shortly")
      unresolvable.set(iss, true)
      unresolvableIssuer()
    }
    return key
  }

  async function verify(authorization: string | undefined, nsid: string, opts: VerifyOptions = {}): Promise<VerifiedServiceAuth> {
    const jwt = extractJwt(authorization)
    const [headerPart, payloadPart] = jwt.split('.') as [string, string, string]

    const header = decodeJsonObject(headerPart)
    if (!header) fail('BadJwt', 'poorly formatted jwt header')
    if (typeof header.alg !== 'string' || !(SERVICE_JWT_ALGS as readonly string[]).includes(header.alg)) {
      fail('BadJwt', 'jwt alg must be ES256K or ES256')
    }

    const payload = decodeJsonObject(payloadPart)
    if (!payload) fail('BadJwt', 'poorly formatted jwt payload')
    const { iss, aud, exp, iat, jti } = payload
    if (typeof iss !== 'string' || iss.length > MAX_ISS_LENGTH || !isDid(iss)) fail('BadJwt', 'jwt iss must be a DID')
    // refused before its signature is checked and its jti spent: the same token may still come with the right issuer
    if (opts.issuer !== undefined && iss !== opts.issuer) fail('BadJwt', `jwt iss must be ${opts.issuer}`)
    if (typeof aud !== 'string') fail('BadJwt', 'jwt aud required')
    if (typeof jti !== 'string' || jti.length === 0) fail('BadJwt', 'jwt jti required')
    if (jti.length > MAX_JTI_LENGTH) fail('BadJwt', `jwt jti is longer than ${MAX_JTI_LENGTH} characters`)
    if (!JTI_SHAPE.test(jti)) fail('BadJwt', 'jwt jti must be printable ASCII without spaces')
    if (typeof iat !== 'number' || !Number.isFinite(iat)) fail('BadJwt', 'jwt iat required')
    if (typeof exp !== 'number' || !Number.isFinite(exp)) fail('BadJwt', 'jwt exp required')
    const now = Date.now() / 1000
    if (iat > now + skew) fail('BadJwt', 'jwt iat is in the future')
    if (exp - now > maxLifetime + skew) {
      fail('JwtLifetimeTooLong', `jwt exp must be at most ${maxLifetime} seconds ahead`)
    }

    try {
      await verifyJwt(jwt, serviceDid, nsid, getSigningKey, verifySignatureNatively)
    } catch (err) {
      if (err instanceof ContractError) throw err
      if (err instanceof AuthRequiredError) {
        const name = err.customErrorName as ErrorCode | undefined
        if (name && PASSTHROUGH_CODES.has(name)) fail(name, err.errorMessage ?? name)
      }
      // verifyJwt does no I/O of its own (key resolution is ours): anything else is a malformed token.
      fail('BadJwt', 'poorly formatted jwt')
    }

    // Only a validly signed token reaches here, so garbage cannot burn a jti.
    // The key outlives exp by the skew: a verifier whose clock is behind still sees it.
    const replayKey = `${replayKeyPrefix}${iss}:${jti}`
    const scope = opts.replayScope === undefined ? '1' : `scope:${opts.replayScope}`
    const set = await redis.set(replayKey, scope, 'EXAT', Math.ceil(exp) + skew, 'NX')
    if (set !== 'OK' && (opts.replayScope === undefined || (await redis.get(replayKey)) !== scope)) fail('JwtReplayed', 'jwt jti has already been used')

    return { iss, aud, lxm: nsid, jti, exp, iat, firstUse: set === 'OK' }
  }

  async function releaseReplay(verified: VerifiedServiceAuth, replayScope: string): Promise<void> {
    // compare and delete in one step: a key another scope took meanwhile (impossible while this one holds it) stays
    await redis.eval(RELEASE_IF_SCOPE, 1, `${replayKeyPrefix}${verified.iss}:${verified.jti}`, `scope:${replayScope}`)
  }

  async function issuerToLookUp(authorization: string | undefined): Promise<string | null> {
    try {
      const payload = decodeJsonObject(extractJwt(authorization).split('.')[1]!)
      const iss = payload?.iss
      if (typeof iss !== 'string' || iss.length > MAX_ISS_LENGTH || !isDid(iss) || !/^did:(plc|web):/.test(iss)) return null
      if (unresolvable.has(iss)) return null
      const cached = await resolver.cache?.checkCache(iss)
      return cached && !cached.expired ? null : iss
    } catch {
      return null
    }
  }

  return { verify, issuerToLookUp, releaseReplay }
}

const RELEASE_IF_SCOPE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`
