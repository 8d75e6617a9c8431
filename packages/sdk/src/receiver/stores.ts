/**
 * Delivery claim stores: the receiver rule "claim the delivery, process it, then complete or release the claim".
 *
 * - `claim(id, ttlMs)`: `{ state: 'claimed', token }` (this caller processes it; the claim lapses after ttlMs if the
 *   process dies), `{ state: 'processing' }` (claimed elsewhere and not lapsed), `{ state: 'done' }` (completed before).
 * - `complete(id, token)`: records `done` (kept `doneTtlMs`, default 30 days: by the memory and Redis stores from the
 *   last claim that met it, so a delivery sent again, say by a redrive, is remembered as long after that; by the Mongo
 *   store from the first completion, which the service's window allows: it sends nothing 30 days after an attempt
 *   first may have reached the receiver) and drops the claim if it is still this one.
 * - `release(id, token)`: drops the claim if it is still this one, so a retry can process the delivery again.
 *
 * Each claim carries a random owner token, which its caller hands back, so complete/release never remove a claim that
 * lapsed and was taken over by another request, in another process or in this one. The claim TTL must exceed the
 * handler's longest run.
 */
import { randomBytes } from 'node:crypto'

export type ClaimState = 'claimed' | 'processing' | 'done'

/** What a claim got: the delivery to process, with the token its complete or release hands back; or why not. */
export type Claim = { state: 'claimed'; token: string } | { state: 'processing' } | { state: 'done' }

export interface DeliveryClaimStore {
  claim(id: string, ttlMs: number): Promise<Claim>
  complete(id: string, token: string): Promise<void>
  release(id: string, token: string): Promise<void>
}

export const DEFAULT_DONE_TTL_MS = 30 * 24 * 60 * 60 * 1000

const newToken = (): string => randomBytes(16).toString('hex')

function assertTtl(ttlMs: number): void {
  if (!Number.isInteger(ttlMs) || ttlMs <= 0) throw new TypeError('ttlMs must be a positive integer')
}

/** how often the memory store forgets what has lapsed (a sweep of both maps, on the next call after this long) */
const MEMORY_SWEEP_MS = 60_000

/**
 * In-process store for tests and development (one process only). What has lapsed (done markers past doneTtlMs,
 * claims of handlers that died) is forgotten at most a minute later: kept, a long-running receiver's memory grew by
 * one entry per delivery, for ever.
 */
export function createMemoryClaimStore(options: { doneTtlMs?: number; now?: () => number } = {}): DeliveryClaimStore & { readonly size: number } {
  const now = options.now ?? Date.now
  const doneTtl = options.doneTtlMs ?? DEFAULT_DONE_TTL_MS
  const claims = new Map<string, { token: string; expiresAt: number }>()
  const done = new Map<string, number>()
  let swept = now()
  const sweep = (t: number) => {
    if (t - swept < MEMORY_SWEEP_MS) return
    swept = t
    for (const [id, until] of done) if (until <= t) done.delete(id)
    for (const [id, claim] of claims) if (claim.expiresAt <= t) claims.delete(id)
  }
  return {
    /** the deliveries it keeps (claims and done markers): for a receiver's own metrics */
    get size() {
      return claims.size + done.size
    },
    async claim(id, ttlMs) {
      assertTtl(ttlMs)
      const t = now()
      sweep(t)
      const doneUntil = done.get(id)
      if (doneUntil !== undefined && doneUntil > t) {
        done.set(id, t + doneTtl) // kept doneTtlMs after the last delivery of it, not the first
        return { state: 'done' }
      }
      const held = claims.get(id)
      if (held && held.expiresAt > t) return { state: 'processing' }
      const token = newToken()
      claims.set(id, { token, expiresAt: t + ttlMs })
      return { state: 'claimed', token }
    },
    async complete(id, token) {
      done.set(id, now() + doneTtl)
      if (claims.get(id)?.token === token) claims.delete(id)
    },
    async release(id, token) {
      if (claims.get(id)?.token === token) claims.delete(id)
    },
  }
}

/** The part of an ioredis client the store uses. */
export interface RedisEvalClient {
  eval(script: string, numkeys: number, ...args: (string | number)[]): Promise<unknown>
}

// KEYS[1] claim, KEYS[2] done; ARGV[1] token, ARGV[2] ttl ms, ARGV[3] done ttl ms (a done marker met is kept again)
const CLAIM_LUA = `
if redis.call('PEXPIRE', KEYS[2], ARGV[3]) == 1 then return 'done' end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 'claimed' end
return 'processing'`
// KEYS[1] claim, KEYS[2] done; ARGV[1] token, ARGV[2] done ttl ms
const COMPLETE_LUA = `
redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1`
// KEYS[1] claim; ARGV[1] token
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`

/**
 * Redis (ioredis) store: claim = one script doing "done marker? (kept doneTtlMs again) else SET claim NX PX ttl"; complete sets the done
 * marker (PX doneTtlMs) and deletes the claim if it still holds this owner token; release is that compare-and-delete.
 * Keys: `<prefix>{<id>}:claim` and `<prefix>{<id>}:done` (hash-tagged: one cluster slot per delivery).
 */
export function createRedisClaimStore(redis: RedisEvalClient, options: { prefix: string; doneTtlMs?: number }): DeliveryClaimStore {
  const doneTtl = options.doneTtlMs ?? DEFAULT_DONE_TTL_MS
  if (!Number.isInteger(doneTtl) || doneTtl <= 0) throw new TypeError('doneTtlMs must be a positive integer')
  const keys = (id: string): [string, string] => [`${options.prefix}{${id}}:claim`, `${options.prefix}{${id}}:done`]
  return {
    async claim(id, ttlMs) {
      assertTtl(ttlMs)
      const token = newToken()
      const state = (await redis.eval(CLAIM_LUA, 2, ...keys(id), token, ttlMs, doneTtl)) as ClaimState
      return state === 'claimed' ? { state, token } : { state: state === 'done' ? 'done' : 'processing' }
    },
    async complete(id, token) {
      await redis.eval(COMPLETE_LUA, 2, ...keys(id), token, doneTtl)
    },
    async release(id, token) {
      await redis.eval(RELEASE_LUA, 1, keys(id)[0], token)
    },
  }
}

/**
 * A document of the MongoDB store: a claim's generation (`<id>#<n>`), the end of one (`<id>#<n>:end:<its token>`),
 * or the done marker (`<id>:done`). `lapsesAt` is when a generation's claim lapses; `expiresAt` when any document may be purged.
 */
export interface ClaimDocument {
  _id: string
  token?: string
  state: 'processing' | 'ended' | 'done'
  lapsesAt?: Date
  expiresAt: Date
}

/** The part of a MongoDB driver Collection<ClaimDocument> the store uses. */
export interface ClaimCollection {
  insertOne(doc: ClaimDocument): Promise<unknown>
  findOne(filter: { _id: string }): Promise<ClaimDocument | null>
}

function isDuplicateKey(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000
}

/** More generations than a delivery's retries and redrives make: past it, claims fail loudly rather than scan on. */
const MAX_GENERATIONS = 1000

/**
 * MongoDB / FerretDB store. It only inserts, and reads by `_id`: the unique `_id` arbitrates every claim, and nothing
 * is ever updated or deleted, because FerretDB 1.x applies neither a filtered update nor a filtered delete atomically
 * (a delete "by `_id` and token" is a read, then a delete by `_id`, which can remove a claim taken meanwhile).
 * - A delivery's claims are generations `<id>#1`, `<id>#2`, …, each inserted once with its owner token and `lapsesAt`.
 *   claim: done marker? → the first generation that is live (not lapsed, not ended) means 'processing'; past the
 *   last one, insert the next (a duplicate key: another request took it, read it again). After the insert the done
 *   marker is read again (a completion may have landed meanwhile); if present, the generation is ended at once.
 * - complete: insert `<id>:done` (duplicate = already done), then end this generation (`<id>#<n>:end:<its token>`: an
 *   end marker counts only for the claim it ended).
 * - release: end this generation, if the token is still its own.
 * The token handed out is `<n>.<random>`. `expiresAt` (now + doneTtlMs, and never before a claim lapses) is set on
 * every document: a TTL index on it (where the server supports one) keeps the collection small; without one the
 * documents are kept and still honoured. As with the done marker, the store forgets a delivery doneTtlMs after it
 * saw it: keep doneTtlMs at least as long as the service may send an id again (30 days, the default).
 */
export function createMongoClaimStore(collection: ClaimCollection, options: { doneTtlMs?: number; now?: () => number } = {}): DeliveryClaimStore {
  const now = options.now ?? Date.now
  const doneTtl = options.doneTtlMs ?? DEFAULT_DONE_TTL_MS
  if (!Number.isInteger(doneTtl) || doneTtl <= 0) throw new TypeError('doneTtlMs must be a positive integer')
  const doneId = (id: string) => `${id}:done`
  const generationId = (id: string, n: number) => `${id}#${n}`
  // an end marker names the claim it ends: one left from a generation purged before it ends no later claim of n
  const endId = (id: string, n: number, secret: string) => `${id}#${n}:end:${secret}`
  const isDone = async (id: string) => (await collection.findOne({ _id: doneId(id) })) !== null
  const insertOnce = async (doc: ClaimDocument): Promise<boolean> => {
    try {
      await collection.insertOne(doc)
      return true
    } catch (err) {
      if (!isDuplicateKey(err)) throw err
      return false
    }
  }
  const end = (id: string, n: number, secret: string) =>
    insertOnce({ _id: endId(id, n, secret), token: secret, state: 'ended', expiresAt: new Date(now() + doneTtl) })
  const ended = async (id: string, n: number, generation: ClaimDocument) =>
    generation.token !== undefined && (await collection.findOne({ _id: endId(id, n, generation.token) })) !== null
  /** This store's generation and random part of a token, or null for one it did not hand out. */
  const parse = (token: string): { n: number; secret: string } | null => {
    const m = /^([1-9][0-9]{0,5})\.([0-9a-f]+)$/.exec(token)
    return m ? { n: Number(m[1]), secret: m[2]! } : null
  }
  const endOwn = async (id: string, token: string) => {
    const own = parse(token)
    if (own === null) return
    const generation = await collection.findOne({ _id: generationId(id, own.n) })
    if (generation?.token === own.secret) await end(id, own.n, own.secret)
  }

  return {
    async claim(id, ttlMs) {
      assertTtl(ttlMs)
      if (await isDone(id)) return { state: 'done' }
      // a claim of the store before generations (`_id` = the delivery id), until it lapses
      const legacy = await collection.findOne({ _id: id })
      if (legacy !== null && legacy.state === 'processing' && legacy.expiresAt.getTime() > now()) return { state: 'processing' }
      // each generation is read once, and once more after a lost insert; a read that never shows the winner of an
      // insert (a lagging secondary) gives up as 'processing' rather than loop
      for (let n = 1, lostInserts = 0; ; ) {
        if (n > MAX_GENERATIONS) throw new Error(`delivery ${id} has been claimed ${MAX_GENERATIONS} times: not claimed again`)
        const generation = await collection.findOne({ _id: generationId(id, n) })
        if (generation !== null) {
          const lapsed = (generation.lapsesAt?.getTime() ?? 0) <= now()
          if (!lapsed && !(await ended(id, n, generation))) return { state: 'processing' }
          n++
          continue
        }
        if (lostInserts > 2) return { state: 'processing' }
        const secret = newToken()
        const t = now()
        const taken = await insertOnce({
          _id: generationId(id, n),
          token: secret,
          state: 'processing',
          lapsesAt: new Date(t + ttlMs),
          expiresAt: new Date(t + Math.max(doneTtl, ttlMs)),
        })
        if (!taken) {
          lostInserts++
          continue // another request took generation n: read it
        }
        if (await isDone(id)) {
          await end(id, n, secret)
          return { state: 'done' }
        }
        return { state: 'claimed', token: `${n}.${secret}` }
      }
    },
    async complete(id, token) {
      await insertOnce({ _id: doneId(id), state: 'done', expiresAt: new Date(now() + doneTtl) })
      await endOwn(id, token)
    },
    async release(id, token) {
      await endOwn(id, token)
    },
  }
}
