/**
 * Endpoint health (docs/events.md, "Endpoint health"), as Svix and Stripe do it: an endpoint that answers
 * `410 Gone`, or whose every attempt has failed for `disableAfterMs` (DELIVERY_DISABLE_AFTER_MS, 5 days), is
 * disabled. Only attempts that reached for the endpoint count (not a gateway or signing-secret failure of ours).
 * The time of the first failure since the last success is kept in Redis per app environment and endpoint (its
 * channel and URL: `<prefix>endpoint-failing:<app DID>:<environment>:<hash>`, one command per attempt); a success
 * deletes it, and so does disabling the endpoint, so one the app enables again starts afresh, as does a new URL. If
 * Redis loses it, the clock starts again at the next failure: an endpoint is then disabled later, never sooner.
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

export function createEndpointHealth(redis: Redis, prefix: string, disableAfterMs: number): EndpointHealth {
  const key = (appDid: string, environment: string, endpoint: string) =>
    `${prefix}endpoint-failing:${appDid}:${environment}:${createHash('sha256').update(endpoint).digest('hex').slice(0, 16)}`
  return {
    async record(appDid, environment, endpoint, attempt, now = Date.now()) {
      if (attempt.delivered) {
        await redis.del(key(appDid, environment, endpoint))
        return null
      }
      if (attempt.statusCode === 410) return 'gone'
      // the first failure's time stays (NX); GET answers it; kept twice the period, so a long-quiet endpoint starts afresh
      const since = (await redis.call('SET', key(appDid, environment, endpoint), String(now), 'PX', String(disableAfterMs * 2), 'NX', 'GET')) as string | null
      return since !== null && now - Number(since) >= disableAfterMs ? 'failing' : null
    },
    async reset(appDid, environment, endpoint) {
      await redis.del(key(appDid, environment, endpoint))
    },
  }
}
