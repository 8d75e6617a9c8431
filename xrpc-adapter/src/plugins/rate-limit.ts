/**
 * Rate limits (docs/operations.md, "Rate limits"): fixed windows counted in Redis by @fastify/rate-limit's store, so
 * every adapter process shares one count. On /xrpc the count is per verified app and environment, checked after
 * service-auth; on the utility routes it is per presented API key (its hash), checked before anything else. Every
 * limited answer carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`; a refusal is 429
 * `RateLimitExceeded` with `Retry-After`. When Redis does not answer, requests pass (the limit fails open) and
 * the failure is logged.
 */
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import { LRUCache } from 'lru-cache'
import type { RateLimit } from '@svc/config'
import { ContractError } from '@svc/errors'
import { clientNetwork } from './client-network'

export type { RateLimit }

/** Checks one request against a limit under a key (who the caller is); throws RateLimitExceeded past it. */
export type Limiter = (request: FastifyRequest, reply: FastifyReply, key: string) => Promise<void>

/** Counts one request under a key; `exceeded` once the window holds more than the limit. */
export type Counter = (request: FastifyRequest, key: string) => Promise<{ exceeded: boolean; max: number; remaining: number; windowMs: number; retryAfterSeconds: number } | null>

/** Registers the shared store on `app` (once per server); `prefix` namespaces the counters in Redis. */
export async function registerRateLimitStore(app: FastifyInstance, redis: Redis, prefix: string): Promise<void> {
  await app.register(rateLimit, { global: false, redis, nameSpace: `${prefix}ratelimit:` })
}

/**
 * A counter named `name` (its counts are `<prefix>ratelimit:undefinedundefined-<name>:<key>`: the library's
 * createRateLimit puts an empty route's method and URL before the name). It answers null (not counted) when the
 * limit is off or Redis did not answer.
 */
export function createCounter(app: FastifyInstance, name: string, limit: RateLimit): Counter {
  if (limit.max === 0) return async () => null
  const keys = new WeakMap<FastifyRequest, string>()
  const check = app.createRateLimit({
    max: limit.max,
    timeWindow: limit.windowMs,
    keyGenerator: (request) => `${name}:${keys.get(request)}`,
  })
  return async (request, key) => {
    keys.set(request, key)
    try {
      const result = await check(request)
      if (result.isAllowed) return null
      return { exceeded: result.isExceeded, max: result.max, remaining: result.remaining, windowMs: result.timeWindow, retryAfterSeconds: result.ttlInSeconds }
    } catch (err) {
      request.log.warn({ limit: name, err: (err as Error).message }, 'rate limit not checked: Redis did not answer')
      return null
    }
  }
}

/** A limiter named `name` over createCounter: the RateLimit headers on every counted answer, 429 past the limit. */
export function createLimiter(app: FastifyInstance, name: string, limit: RateLimit): Limiter {
  const count = createCounter(app, name, limit)
  return async (request, reply, key) => {
    const result = await count(request, key)
    if (!result) return
    reply.headers({
      'RateLimit-Limit': result.max,
      'RateLimit-Remaining': result.remaining,
      'RateLimit-Reset': result.retryAfterSeconds,
    })
    if (result.exceeded) {
      reply.header('Retry-After', result.retryAfterSeconds)
      request.log.warn({ limit: name, max: result.max, windowMs: result.windowMs }, 'rate limit exceeded')
      throw new ContractError('RateLimitExceeded', `rate limit exceeded: at most ${result.max} requests per ${result.windowMs / 1000} s; retry after ${result.retryAfterSeconds} s`)
    }
  }
}

export interface IssuerLookupGuard {
  /**
   * Counts the call's issuer when verifying its JWT would look its DID document up and the address has not named it
   * in this window; throws RateLimitExceeded once the address named more than the limit (then, for the rest of the
   * window, for every call of the address). The JWT is the call's Authorization header, or the one given (a buyer's
   * or an organizer's assertion, whose issuer is looked up as well).
   */
  check(request: FastifyRequest, reply: FastifyReply, jwt?: string): Promise<void>
  /**
   * Counts a verified call's issuer that the service does not know (the gateway answered AppNotRegistered): a did:key
   * issuer costs no lookup, but each made-up one costs a signature check and a gateway round trip. Never throws: the
   * call keeps its answer, and once the address named more unknown issuers than the limit its next calls are refused.
   */
  countUnregistered(request: FastifyRequest, iss: string): Promise<void>
}

export interface IssuerLookupGuardOptions {
  limit: RateLimit
  redis: Redis
  /** REDIS_PREFIX: the issuers an address named in its window are the set `<prefix>issuer-lookups:<address>` */
  redisPrefix: string
  /** the issuer whose DID document verifying this header would fetch (service-auth's issuerToLookUp) */
  issuerToLookUp(authorization: string | undefined): Promise<string | null>
}

/**
 * KEYS[1]: the issuers an address named in its window; ARGV: the issuer, the limit, the window (ms). Answers 0 when
 * the call goes on (the issuer named before in this window, or added now; the first opens the window), else the ms
 * left of the window (refused: the set is full, and the issuer is not added).
 */
const NAME_ISSUER = `
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 0 end
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  local left = redis.call('PTTL', KEYS[1])
  if left > 0 then return left end
  redis.call('DEL', KEYS[1])
end
redis.call('SADD', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 0`

/**
 * The issuer-lookup guard: per client address, the distinct issuers whose DID documents the address's /xrpc calls
 * had the service look up (docs/operations.md, "Rate limits"), counted before the lookup, and the issuers of its
 * verified calls that the service does not know (no app registered), counted after the gateway said so. A token's
 * signature can only be checked with its issuer's key, which for a did:plc or did:web issuer is fetched over the
 * network (the PLC directory, the issuer's host): forged tokens each naming a made-up issuer would have the service
 * make lookups without end, until the directory limits the service's own address and every app's auth fails. An app names one
 * issuer, cached once looked up, so it is counted once a window at most, also while the directory is away and its
 * calls are refused. Past the limit, an address's calls are refused 429 before auth for the rest of the window.
 *
 * The address's issuers of its window are one Redis set, checked and added to in one script: an issuer refused is
 * not recorded (else, named again in the next window, it would pass uncounted), and every issuer the set holds goes
 * with the window. The set is shared by the adapter processes; each keeps the addresses it saw pass the limit (a
 * refused address costs no Redis call).
 */
export function createIssuerLookupGuard(opts: IssuerLookupGuardOptions): IssuerLookupGuard {
  const { limit } = opts
  /** address → the end of its window, ms */
  const refusedUntil = new LRUCache<string, number>({ max: 10_000 })
  const refuse = (request: FastifyRequest, reply: FastifyReply, until: number): never => {
    const retryAfter = Math.max(1, Math.ceil((until - Date.now()) / 1000))
    reply.header('Retry-After', retryAfter)
    request.log.warn({ limit: 'xrpc-issuer-lookups', max: limit.max, windowMs: limit.windowMs }, 'rate limit exceeded')
    throw new ContractError(
      'RateLimitExceeded',
      `too many unknown service-auth issuers from this address: at most ${limit.max} per ${limit.windowMs / 1000} s; retry after ${retryAfter} s`,
    )
  }
  /** Names `iss` in the address's window: the end of the window when the address is past the limit, else null. */
  const name = async (request: FastifyRequest, iss: string): Promise<number | null> => {
    const address = clientNetwork(request.ip)
    let windowLeftMs: number
    try {
      const key = `${opts.redisPrefix}issuer-lookups:${address}`
      windowLeftMs = Number(await opts.redis.eval(NAME_ISSUER, 1, key, iss, String(limit.max), String(limit.windowMs)))
    } catch (err) {
      request.log.warn({ limit: 'xrpc-issuer-lookups', err: (err as Error).message }, 'rate limit not checked: Redis did not answer')
      return null
    }
    if (windowLeftMs === 0) return null
    const until = Date.now() + windowLeftMs
    refusedUntil.set(address, until)
    return until
  }
  return {
    async check(request, reply, jwt) {
      if (limit.max === 0) return
      if (refusedUntil.size > 0) {
        const until = refusedUntil.get(clientNetwork(request.ip))
        if (until !== undefined && until > Date.now()) refuse(request, reply, until)
      }
      const iss = await opts.issuerToLookUp(jwt === undefined ? request.headers.authorization : `Bearer ${jwt}`)
      if (iss === null) return
      const until = await name(request, iss)
      if (until !== null) refuse(request, reply, until)
    },
    async countUnregistered(request, iss) {
      if (limit.max === 0) return
      await name(request, iss)
    },
  }
}
