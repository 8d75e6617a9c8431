/**
 * Endpoint health (docs/events.md, "Endpoint health"), as Svix and Stripe do it: an endpoint that answers
 * `410 Gone`, or whose every attempt has failed for `disableAfterMs` (DELIVERY_DISABLE_AFTER_MS, 5 days), is
 * disabled. Only attempts that reached for the endpoint count (not a gateway or signing-secret failure of ours).
 * The time of the first failure since the last success, and of the latest failure, are kept in Redis per app
 * environment and endpoint (its channel and URL: `<prefix>endpoint-failing-since:<app DID>:<environment>:<hash>`,
 * one command per attempt); a success deletes them, and so does disabling the endpoint, so one the app enables again
 * starts afresh, as does a new URL. An endpoint failing all along is tried at least once per `quietMs` (the longest
 * step of the retry schedule) while a delivery runs; a failure after a longer quiet (no delivery in between) starts
 * the clock again, so an endpoint that failed days ago and once now is not disabled. If Redis loses the clock, it
 * starts again at the next failure: an endpoint is then disabled later, never sooner.
 */
import { createHash } from 'node:crypto'
import type { Redis } from 'ioredis'

export type DisableReason = 'gone' | 'failing'

export interface EndpointHealth {
  /** records an attempt's outcome at `endpoint` (its channel and URL); the reason to disable it now, if there is one */
  record(appDid: string, environment: string, endpoint: string, attempt: { delivered: boolean; statusCode: number | null }, now?: number): Promise<DisableReason | null>
  /** the endpoint was disabled: its clock starts afresh once the app enables it again */
  reset(appDid: string, environment: string, endpoint: string): Promise<void>
}

/**
 * Records a failure at ARGV[1] (ms): the first failure's time, started afresh when the last failure is more than
 * ARGV[3] ms old; kept ARGV[2] ms. Answers the first failure's time.
 */
const RECORD_FAILURE = `
local v = redis.call('HMGET', KEYS[1], 'first', 'last')
local first = v[1]
if (not first) or (not v[2]) or (tonumber(ARGV[1]) - tonumber(v[2]) > tonumber(ARGV[3])) then first = ARGV[1] end
redis.call('HSET', KEYS[1], 'first', first, 'last', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return first`

export function createEndpointHealth(redis: Redis, prefix: string, disableAfterMs: number, quietMs: number): EndpointHealth {
  // (`endpoint-failing:` held the first failure alone, as a string; those keys lapse after twice the period)
  const key = (appDid: string, environment: string, endpoint: string) =>
    `${prefix}endpoint-failing-since:${appDid}:${environment}:${createHash('sha256').update(endpoint).digest('hex').slice(0, 16)}`
  return {
    async record(appDid, environment, endpoint, attempt, now = Date.now()) {
      if (attempt.delivered) {
        await redis.del(key(appDid, environment, endpoint))
        return null
      }
      if (attempt.statusCode === 410) return 'gone'
      const since = Number(await redis.eval(RECORD_FAILURE, 1, key(appDid, environment, endpoint), String(now), String(disableAfterMs * 2), String(quietMs)))
      return now - since >= disableAfterMs ? 'failing' : null
    },
    async reset(appDid, environment, endpoint) {
      await redis.del(key(appDid, environment, endpoint))
    },
  }
}
