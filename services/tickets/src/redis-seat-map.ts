/**
 * The seat map (domain/seat-map.ts) in Redis. Per tier, under keys sharing the hash tag `{tierId}`:
 * - `live`: the bitmap of taken seats; `due`: a sorted set of the reservations holding its seats, by expiresAt;
 * - `built`: the map was built from the units (absent after Redis lost its data: readers then take the units);
 * - `fresh`: it was rebuilt less than `reconcileMs` ago (absent: the sweep rebuilds it);
 * - `recent` / `cleared`: seats taken / freed since the rebuild in progress began.
 * A tier's map that nobody reads for `idleMs` expires (a past event's tiers do not stay in Redis for good); the next
 * read rebuilds it. `built` expires first: the data keys live `IDLE_MARGIN_MS` longer and every step that renews
 * `built` renews them too, so the map is never seen built without its bits.
 * A rebuild reads the units, which takes seconds on a large tier, while holds go on. Its result is
 * (units read AND NOT cleared) OR recent, written in one script: what changed during the read wins over the read,
 * and drift left by a process that stopped between a unit's write and the map's is repaired.
 */
import { randomBytes } from 'node:crypto'
import Redis, { type ChainableCommander } from 'ioredis'
import type { Logger } from 'pino'
import { KEPT_UNTIL } from './domain/capacity'
import { bitsOf, seatNumber, type SeatMap, type SeatMapState } from './domain/seat-map'
import { logConnectionErrors, REQUEST_REDIS_OPTIONS } from '@svc/operations'

/** How often the sweep reconciles a tier's map with its units. */
export const DEFAULT_SEAT_MAP_RECONCILE_MS = 5 * 60_000
/** A tier not read for this long is no longer reconciled (its map stays, kept up to date by writes). */
const ACTIVE_FOR_MS = 60 * 60_000
/** A rebuild that died frees its lock after this. */
const REBUILD_LOCK_MS = 10 * 60_000
/** A tier's map not read for this long expires (rebuilt from the units by the next read). */
export const DEFAULT_SEAT_MAP_IDLE_MS = 7 * 24 * 60 * 60_000
/** How much longer than `built` the data keys live. */
const IDLE_MARGIN_MS = 60 * 60_000

// KEYS: live tmp cleared recent notCleared built fresh lock due; ARGV: token, bits read, fresh ms, built ms, data ms
const FINISH_REBUILD = `
if redis.call('GET', KEYS[8]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
local bytes = string.len(ARGV[2])
if bytes > 0 then
  local last = bytes * 8 - 1
  redis.call('SETBIT', KEYS[3], last, redis.call('GETBIT', KEYS[3], last))
  redis.call('BITOP', 'NOT', KEYS[5], KEYS[3])
  redis.call('BITOP', 'AND', KEYS[2], KEYS[2], KEYS[5])
end
redis.call('BITOP', 'OR', KEYS[2], KEYS[2], KEYS[4])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('RENAME', KEYS[2], KEYS[1]) else redis.call('DEL', KEYS[1]) end
redis.call('DEL', KEYS[5], KEYS[8])
redis.call('SET', KEYS[6], '1', 'PX', ARGV[4])
redis.call('SET', KEYS[7], '1', 'PX', ARGV[3])
for _, k in ipairs({KEYS[1], KEYS[3], KEYS[4], KEYS[9]}) do redis.call('PEXPIRE', k, ARGV[5]) end
return 1
`

/** A transaction's replies; throws its first error. */
async function execAll(m: ChainableCommander): Promise<unknown[]> {
  const replies = await m.exec()
  if (!replies) throw new Error('seat map: the transaction was aborted')
  return replies.map(([err, reply]) => {
    if (err) throw err
    return reply
  })
}

export interface RedisSeatMap extends SeatMap {
  close(): Promise<void>
}

export function createRedisSeatMap(opts: { redisUrl: string; redisPrefix: string; reconcileMs?: number; idleMs?: number; logger?: Pick<Logger, 'warn'> }): RedisSeatMap {
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: 1, disconnectTimeout: 200, ...REQUEST_REDIS_OPTIONS })
  logConnectionErrors(redis, opts.logger, 'seat map: redis connection error')
  const reconcileMs = opts.reconcileMs ?? DEFAULT_SEAT_MAP_RECONCILE_MS
  const builtMs = opts.idleMs ?? DEFAULT_SEAT_MAP_IDLE_MS
  const dataMs = builtMs + IDLE_MARGIN_MS
  const active = `${opts.redisPrefix}seats:active`
  /** the Redis server's run_id when the sweep last looked (another is a restart or a failover) */
  let runId: string | null = null
  const keys = (tierId: string) => {
    const base = `${opts.redisPrefix}seats:{${tierId}}:`
    return {
      live: `${base}live`,
      tmp: `${base}tmp`,
      cleared: `${base}cleared`,
      recent: `${base}recent`,
      notCleared: `${base}not-cleared`,
      built: `${base}built`,
      fresh: `${base}fresh`,
      lock: `${base}lock`,
      due: `${base}due`,
    }
  }

  return {
    async read(tierId: string, now: Date): Promise<SeatMapState | null> {
      const k = keys(tierId)
      const [built, taken, due] = await execAll(
        redis
          .multi()
          .exists(k.built)
          .getBuffer(k.live)
          .zrangebyscore(k.due, '-inf', now.getTime())
          .zadd(active, now.getTime(), tierId)
          // renewed together, the data keys after `built` (see the top)
          .pexpire(k.built, builtMs)
          .pexpire(k.live, dataMs)
          .pexpire(k.due, dataMs)
          .pexpire(k.recent, dataMs)
          .pexpire(k.cleared, dataMs),
      )
      if (built !== 1) return null
      return { taken: (taken as Buffer | null) ?? Buffer.alloc(0), due: due as string[] }
    },

    async holding(tierId, reservationId, expiresAt) {
      const k = keys(tierId)
      await execAll(redis.multi().zadd(k.due, expiresAt.getTime(), reservationId).pexpire(k.due, dataMs))
    },

    async took(tierId, seats) {
      const k = keys(tierId)
      const m = redis.multi()
      for (const n of seats) m.setbit(k.live, n, 1).setbit(k.recent, n, 1)
      await execAll(m.pexpire(k.live, dataMs).pexpire(k.recent, dataMs))
    },

    async freed(tierId, seats) {
      const k = keys(tierId)
      const m = redis.multi()
      for (const n of seats) m.setbit(k.live, n, 0).setbit(k.cleared, n, 1).setbit(k.recent, n, 0)
      await execAll(m.pexpire(k.live, dataMs).pexpire(k.cleared, dataMs).pexpire(k.recent, dataMs))
    },

    async ended(tierId, reservationIds) {
      if (reservationIds.length) await redis.zrem(keys(tierId).due, ...reservationIds)
    },

    async rebuild(tierId, readUnits) {
      const k = keys(tierId)
      const token = randomBytes(12).toString('hex')
      if ((await redis.set(k.lock, token, 'PX', REBUILD_LOCK_MS, 'NX')) !== 'OK') return null
      try {
        // from here, what is taken or freed is logged, so the units read below can be corrected by it
        await redis.del(k.recent, k.cleared)
        const units = await readUnits()
        const due = new Map<string, number>()
        for (const u of units) if (u.expiresAt.getTime() < KEPT_UNTIL.getTime()) due.set(u.reservationId, u.expiresAt.getTime())
        if (due.size) await redis.zadd(k.due, ...[...due].flatMap(([id, at]) => [at, id]))
        const bits = bitsOf(units.map((u) => seatNumber(u.unit)))
        await redis.eval(FINISH_REBUILD, 9, k.live, k.tmp, k.cleared, k.recent, k.notCleared, k.built, k.fresh, k.lock, k.due, token, bits, reconcileMs, builtMs, dataMs)
        return units
      } catch (err) {
        // whichever step failed, the next reader may rebuild (else every read of the tier would read its units until
        // the lock lapsed, REBUILD_LOCK_MS)
        await redis.eval(`if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end`, 1, k.lock, token).catch(() => undefined)
        throw err
      }
    },

    async stale() {
      const now = Date.now()
      await redis.zremrangebyscore(active, '-inf', now - ACTIVE_FOR_MS)
      const tiers = await redis.zrange(active, 0, -1)
      const server = /^run_id:(\w+)/m.exec(await redis.info('server'))?.[1] ?? null
      if (runId !== null && server !== null && server !== runId) {
        // Redis restarted (its data as of its last save: freed seats show taken again, and a tier sold out that is
        // not) or failed over (a replica behind): no map is trusted until rebuilt, a rebuild lock restored included.
        // The new run_id is kept only once every map is let go, so a sweep cut off halfway does it again
        await Promise.all(tiers.map((tier) => redis.del(keys(tier).built, keys(tier).fresh, keys(tier).lock)))
        runId = server
        return tiers
      }
      runId = server ?? runId
      if (tiers.length === 0) return []
      const fresh = await Promise.all(tiers.map((t) => redis.exists(keys(t).fresh)))
      return tiers.filter((_, i) => fresh[i] === 0)
    },

    async close() {
      redis.disconnect()
    },
  }
}
