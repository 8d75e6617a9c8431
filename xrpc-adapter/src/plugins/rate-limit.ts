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
import type { RateLimit } from '@svc/config'
import { ContractError } from '@svc/errors'

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
