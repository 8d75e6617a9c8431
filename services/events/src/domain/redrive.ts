/**
 * Redrive (docs/events.md, "Developer utility routes"): put a failed (or delivered) delivery back on the queue for a
 * new run of the schedule, with the same delivery id. Either one delivery (`deliveryId`) or the app environment's
 * failed deliveries created since a time (`status: failed`, oldest first, up to `limit`).
 *
 * Exactly once per run, whatever the concurrency: each delivery run is claimed in Redis
 * (`SET <prefix>redrive:<id>:<run> NX EX 1h`) and only the claim's winner moves the delivery to the next run and
 * puts its job back (BullMQ `retry` of the failed or completed job, resetting its attempts, or a new job when the
 * old one is gone). A delivery already queued (`pending`, `held`) is not queued again.
 *
 * The claim's value is the time it was taken. A run started by a redrive less than REDRIVE_SETTLE_MS ago is not
 * redriven again, so parallel calls still queue the delivery once when its new run ends (is delivered) before some of
 * them read it. A claim whose winner died before moving the delivery on (the delivery still shows the claimed run
 * after STALE_CLAIM_MS) may be taken over by one later redrive (compare-and-set in Redis), so a crash does not leave
 * a delivery unredrivable for the claim's whole lifetime.
 */
import type { Job } from 'bullmq'
import { ContractError } from '@svc/errors'
import type { DeliveryDoc } from '../models'
import type { DeliveryJob } from '../queues'
import type { EventsDomain } from './context'
import { enqueueDelivery, firstReached, RECEIVERS_KEEP_IDS_MS, requeueLostDelivery } from './deliveries'
import { DELIVERY_ID_RE } from './envelope'
import { TEST_DELIVERY_RETENTION_MS } from './retention'
import { scheduleSpanMs } from './schedule'
import { parseEnvironment, parseZonedDateTime, type Environment } from '@svc/vocabulary'
import type { RedriveInput } from '../generated/graph-types'

/**
 * How long a run's claim stands: past every call that could still have read the delivery at that run (requests end
 * within the gateway's and the adapter's timeouts, 30 s) and past REDRIVE_SETTLE_MS and STALE_CLAIM_MS, which read
 * it. Longer only kept keys: an app redriving a delivered delivery every 10 s left one per run in Redis for days.
 */
export const REDRIVE_CLAIM_TTL_SECONDS = 3600
export const DEFAULT_REDRIVE_LIMIT = 100
export const MAX_REDRIVE_LIMIT = 1000
/** a claim older than this whose delivery has not moved on is considered abandoned by a dead process */
export const STALE_CLAIM_MS = 60_000
/**
 * A delivery redriven less than this ago is not redriven again, whatever its state: a parallel call that reads the
 * delivery only after the first redrive's new run already ended (delivered at once) must not start a third run.
 */
export const REDRIVE_SETTLE_MS = 10_000
/** how long a redrive waits for a job that is still finishing its last attempt (active) before giving up on it */
const ACTIVE_WAIT_MS = 10_000
/**
 * How long a redrive of one delivery waits, before it changes anything, for the job of the delivery's last attempt to
 * leave `active` (its worker wrote the outcome and is moving it out: milliseconds). A job active longer is held by a
 * worker that stopped, until BullMQ's stall check gives it back (within twice DELIVERY_LOCK_MS); in a batch, less.
 */
export const REDRIVE_ACTIVE_WAIT_MS = { one: 5_000, batch: 1_000 } as const
const BATCH_CONCURRENCY = 10
/** how long the claim of requeueing a lost job stands (the job exists by then) */
const LOST_CLAIM_TTL_SECONDS = 60
const PROGRESS_EVERY = 100
/**
 * A test delivery this close to its retention's end is not redriven: the prune (retention.ts) reads what it deletes
 * and then deletes it by id (FerretDB), so a run started in between would be deleted with its job still sending it,
 * unlogged. An hour is the prune's period, far past the moments between this check and the new run's write.
 */
export const RETENTION_REDRIVE_MARGIN_MS = 3600_000
/** The oldest a test delivery may be created and still be redriven (RETENTION_REDRIVE_MARGIN_MS). */
const testRedrivableFrom = (now: Date) => new Date(now.getTime() - TEST_DELIVERY_RETENTION_MS + RETENTION_REDRIVE_MARGIN_MS)

export type { RedriveInput }

export type RedriveRequest = { kind: 'one'; deliveryId: string } | { kind: 'batch'; since: Date | null; limit: number }

/** Exactly one of deliveryId or status (only `failed`); `since` (ISO 8601 with a zone) and `limit` go with status. */
export function parseRedriveInput(input: RedriveInput | null | undefined): RedriveRequest {
  const i = input ?? {}
  const hasId = i.deliveryId !== undefined && i.deliveryId !== null
  const hasStatus = i.status !== undefined && i.status !== null
  if (hasId === hasStatus) throw new ContractError('InvalidRequest', 'give exactly one of deliveryId or status')
  if (hasId) {
    if (typeof i.deliveryId !== 'string') throw new ContractError('InvalidRequest', 'deliveryId must be a string')
    if ((i.since ?? null) !== null || (i.limit ?? null) !== null) {
      throw new ContractError('InvalidRequest', 'since and limit go with status, not with deliveryId')
    }
    return { kind: 'one', deliveryId: i.deliveryId }
  }
  if (i.status !== 'failed') throw new ContractError('InvalidRequest', 'status must be "failed": only failed deliveries are redriven in a batch')
  let since: Date | null = null
  if (i.since !== undefined && i.since !== null) {
    since = parseZonedDateTime(i.since)
    if (!since) throw new ContractError('InvalidRequest', 'since must be an ISO 8601 date-time with a time zone, e.g. 2026-06-01T00:00:00Z')
  }
  let limit = DEFAULT_REDRIVE_LIMIT
  if (i.limit !== undefined && i.limit !== null) {
    if (typeof i.limit !== 'number' || !Number.isInteger(i.limit) || i.limit < 1 || i.limit > MAX_REDRIVE_LIMIT) {
      throw new ContractError('InvalidRequest', `limit must be an integer from 1 to ${MAX_REDRIVE_LIMIT}`)
    }
    limit = i.limit
  }
  return { kind: 'batch', since, limit }
}

export function redriveClaimKey(redisPrefix: string, deliveryId: string, run: number): string {
  return `${redisPrefix}redrive:${deliveryId}:${run}`
}

// KEYS[1] claim, ARGV[1] the stale value seen, ARGV[2] the new value, ARGV[3] ttl: replaces the claim only if unchanged.
const TAKE_OVER = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3]) return 1 end return 0`

type Domain = Pick<EventsDomain, 'models' | 'deliveries' | 'redis' | 'redisPrefix' | 'logger'>

const redrivable = (doc: Pick<DeliveryDoc, 'status'>) => doc.status === 'failed' || doc.status === 'delivered'

/** Wins the claim of this delivery run, or takes over an abandoned one; false when another redrive has it. */
async function claimRun(domain: Domain, doc: DeliveryDoc): Promise<boolean> {
  const run = doc.run ?? 1
  const key = redriveClaimKey(domain.redisPrefix, doc._id, run)
  const stamp = String(Date.now())
  if ((await domain.redis.set(key, stamp, 'EX', REDRIVE_CLAIM_TTL_SECONDS, 'NX')) === 'OK') return true
  const held = await domain.redis.get(key)
  if (held === null || Date.now() - Number(held) < STALE_CLAIM_MS) return false
  const fresh = (await domain.models.Delivery.findById(doc._id, { attempts: 0 }).lean()) as DeliveryDoc | null
  if (!fresh || (fresh.run ?? 1) !== run || !redrivable(fresh)) return false
  const took = await domain.redis.eval(TAKE_OVER, 1, key, held, `${Date.now()}`, String(REDRIVE_CLAIM_TTL_SECONDS))
  if (took === 1) domain.logger.warn({ deliveryId: doc._id, run }, 'redrive: took over an abandoned claim')
  return took === 1
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * Puts the delivery's job back for its new run (`d`, as just written): the old run's job is removed and a new one
 * added with the new run's data, or one added when it is gone. Not a retry of the finished job: BullMQ keeps a job's
 * count of stalls through a retry (and one added again for the attempts its run had left, when Redis lost the first,
 * keeps its attempts), so a job that failed for stalling 5 times failed its new run at the first stall. So is an old
 * run's job not finished yet (waiting after a stall, or delayed: a retry BullMQ scheduled after the run's last outcome
 * was written): kept, the new run would have counted from its attempts and waited out its backoff.
 */
async function requeueJob(domain: Domain, d: DeliveryDoc): Promise<void> {
  const deliveryId = d._id
  const deadline = Date.now() + ACTIVE_WAIT_MS
  for (;;) {
    const job = (await domain.deliveries.getJob(deliveryId)) as Job<DeliveryJob> | undefined
    if (!job) {
      await enqueueDelivery(domain.deliveries, d)
      return
    }
    const state = await job.getState()
    if (state !== 'active' && state !== 'unknown') {
      try {
        await job.remove()
        continue
      } catch (err) {
        // its state changed between the read and the retry (removed, or moved): look again
        if (Date.now() > deadline) throw err
        continue
      }
    }
    if (state === 'unknown') {
      // removed meanwhile: the next pass adds it
      if (Date.now() > deadline) throw new Error(`redrive: the job of ${deliveryId} is in no known state`)
      await sleep(10)
      continue
    }
    // The worker wrote the outcome and is moving the job out of active: wait for it to land.
    if (Date.now() > deadline) {
      domain.logger.warn({ deliveryId }, 'redrive: the job stayed active; left as is')
      return
    }
    await sleep(50)
  }
}

/**
 * How long after it was first sent a delivery may be sent again: each attempt of a new run must reach receivers that
 * still know the id, or it could be processed twice. A run takes the retry schedule (about 3 days) and may take
 * longer (each delay has 10% of jitter, and a receiver's Retry-After can stretch a step): twice the schedule covers
 * both. Measured from the first attempt that may have reached a receiver (firstReached: a failed one counts, as its
 * receiver may have processed it and answered late, or with a 5xx), whatever the status now: a delivered one
 * redriven into a run that failed was delivered all the same, and one redriven into a run that delivered again (the
 * receiver answered a duplicate) did not make receivers remember it any longer. One that never reached a receiver
 * (no endpoint, the connection refused) is always redriven.
 */
export const REDRIVE_DELIVERED_WITHIN_MS = RECEIVERS_KEEP_IDS_MS - 2 * scheduleSpanMs()
const REDRIVE_DELIVERED_WITHIN_DAYS = Math.floor(REDRIVE_DELIVERED_WITHIN_MS / (24 * 3600 * 1000))

/** Why a redrive of one delivery queued nothing (docs/events.md, "Developer utility routes"). */
export const NOT_QUEUED = {
  open: 'already queued: the delivery is pending or held and its next attempt is scheduled',
  settling: `redriven less than ${REDRIVE_SETTLE_MS / 1000} s ago: its new run has started; list the deliveries before redriving again`,
  parallel: 'another redrive of this delivery queued it',
  active: "its last attempt's job is still active: its worker is finishing it, or stopped and holds it until BullMQ gives it back (about a minute); redrive it again then",
  retention: `a test delivery kept for ${TEST_DELIVERY_RETENTION_MS / 86_400_000} days and within an hour of being deleted: send a new test event instead`,
  delivered: `first sent more than ${REDRIVE_DELIVERED_WITHIN_DAYS} days ago: receivers keep the ids of processed deliveries for 30 days, and a new run's attempts may take 3 days or more, so it could be processed twice`,
} as const

type Outcome = { queued: 0; reason: string } | { queued: 1 }
const notQueued = (reason: string): Outcome => ({ queued: 0, reason })

/**
 * A `pending` or `held` delivery keeps its job; one whose job Redis lost is queued again where its run stands (as
 * the reconciler does).
 */
async function requeueIfLost(domain: Domain, doc: DeliveryDoc, now: Date): Promise<Outcome> {
  if (await domain.deliveries.getJob(doc._id)) return notQueued(NOT_QUEUED.open)
  // a run a redrive started moments ago: that redrive is between removing the finished job and adding the new one
  const run = doc.run ?? 1
  if (run > 1) {
    const previous = await domain.redis.get(redriveClaimKey(domain.redisPrefix, doc._id, run - 1))
    if (previous !== null && Date.now() - Number(previous) < REDRIVE_SETTLE_MS) return notQueued(NOT_QUEUED.parallel)
  }
  // parallel calls: one queues it (the add is a no-op by job id for the others, which must answer 0)
  const claim = `${redriveClaimKey(domain.redisPrefix, doc._id, doc.run ?? 1)}:lost:${doc.attemptCount ?? 0}`
  if ((await domain.redis.set(claim, String(Date.now()), 'EX', LOST_CLAIM_TTL_SECONDS, 'NX')) !== 'OK') return notQueued(NOT_QUEUED.parallel)
  if (!(await requeueLostDelivery(domain.models, domain.deliveries, doc._id, now))) return notQueued(NOT_QUEUED.parallel)
  domain.logger.warn({ deliveryId: doc._id }, 'redrive: the open delivery had no job; queued again')
  return { queued: 1 }
}

/**
 * Whether the delivery's job is out of `active` (or gone) within `waitMs`. A failed or delivered delivery's job
 * leaves `active` for `failed` or `completed`, or, held by a worker that stopped, for waiting once its lock expires
 * (DELIVERY_LOCK_MS, 30 s, then the next stall check): requeueJob replaces each of those with the new run's job.
 */
async function jobLeftActive(domain: Domain, deliveryId: string, waitMs: number): Promise<boolean> {
  const deadline = Date.now() + waitMs
  for (;;) {
    const job = await domain.deliveries.getJob(deliveryId)
    if (!job || (await job.getState()) !== 'active') return true
    if (Date.now() > deadline) return false
    await sleep(50)
  }
}

/** Redrives one delivery document of the caller's app environment: queued 1 by this call, or 0 and why not. */
async function redriveOne(domain: Domain, doc: DeliveryDoc, now: Date, activeWaitMs: number): Promise<Outcome> {
  if (!redrivable(doc)) return requeueIfLost(domain, doc, now) // pending or held: queued, unless Redis lost the job
  if (doc.environment === 'test' && doc.createdAt < testRedrivableFrom(now)) {
    return notQueued(NOT_QUEUED.retention)
  }
  const first = firstReached(doc)
  if (first && now.getTime() - first.getTime() > REDRIVE_DELIVERED_WITHIN_MS) {
    return notQueued(NOT_QUEUED.delivered)
  }
  const run = doc.run ?? 1
  if (run > 1) {
    const previous = await domain.redis.get(redriveClaimKey(domain.redisPrefix, doc._id, run - 1))
    if (previous !== null && Date.now() - Number(previous) < REDRIVE_SETTLE_MS) return notQueued(NOT_QUEUED.settling) // this run is a redrive of moments ago
  }
  // a new run started under a job still active would leave the stopped worker's job to run the old one
  if (!(await jobLeftActive(domain, doc._id, activeWaitMs))) {
    domain.logger.warn({ deliveryId: doc._id, run }, 'redrive: the job of its last attempt is still active; not queued')
    return notQueued(NOT_QUEUED.active)
  }
  if (!(await claimRun(domain, doc))) return notQueued(NOT_QUEUED.parallel)
  // only from the run it read, still finished: a claim winner that stalled past the takeover must not start the
  // next run a second time (its delivery already moved on: queued, perhaps delivered, by the redrive that took over)
  const started = await domain.models.Delivery.updateOne(
    { _id: doc._id, appDid: doc.appDid, environment: doc.environment, run: run === 1 ? { $in: [1, null] } : run, status: { $in: ['failed', 'delivered'] } },
    { $set: { status: 'pending', run: run + 1, nextAttemptAt: now, failedAt: null } },
  )
  if (started.matchedCount === 0) return notQueued(NOT_QUEUED.parallel)
  await requeueJob(domain, { ...doc, run: run + 1 })
  domain.logger.info({ deliveryId: doc._id, run: run + 1 }, 'redrive: delivery queued')
  return { queued: 1 }
}

/** The redrive of the app environment's deliveries described by `input`; how many this call put back on the queue. */
export async function redriveDeliveries(
  domain: Domain,
  appDid: string,
  environmentRaw: unknown,
  input: RedriveInput | null | undefined,
  now: Date = new Date(),
): Promise<{ ok: true; queued: number; reason?: string }> {
  const environment: Environment = parseEnvironment(environmentRaw)
  const request = parseRedriveInput(input)
  if (request.kind === 'one') {
    const doc = DELIVERY_ID_RE.test(request.deliveryId)
      ? ((await domain.models.Delivery.findOne({ _id: request.deliveryId, appDid, environment }, { attempts: 0 }).lean()) as DeliveryDoc | null)
      : null
    if (!doc) {
      const named = DELIVERY_ID_RE.test(request.deliveryId) ? request.deliveryId : 'with that id'
      throw new ContractError('DeliveryNotFound', `no delivery ${named} in this app's ${environment} environment`)
    }
    return { ok: true, ...(await redriveOne(domain, doc, now, REDRIVE_ACTIVE_WAIT_MS.one)) }
  }

  const filter: Record<string, unknown> = { appDid, environment, status: 'failed' }
  // test deliveries near their retention's end are refused too (redriveOne): left out, as the window's below are
  const bounds = [request.since, environment === 'test' ? testRedrivableFrom(now) : null].filter((d): d is Date => d !== null)
  if (bounds.length > 0) filter.createdAt = { $gte: new Date(Math.max(...bounds.map((d) => d.getTime()))) }
  // only those a redrive may send: never delivered, or first delivered within the window, and never reached a
  // receiver, or first reached one within the window (the others, always refused, would take the batch's places,
  // oldest first, and keep newer failures from ever being reached). Both: a delivery first delivered before
  // firstReachedAt was recorded may have it later than its first delivery.
  const cutoff = new Date(now.getTime() - REDRIVE_DELIVERED_WITHIN_MS)
  filter.$or = [{ deliveredAt: null }, { firstDeliveredAt: { $gte: cutoff } }, { firstDeliveredAt: { $exists: false }, deliveredAt: { $gte: cutoff } }]
  filter.$and = [{ $or: [{ firstReachedAt: { $exists: false } }, { firstReachedAt: { $gte: cutoff } }] }]
  const docs = (await domain.models.Delivery.find(filter, { attempts: 0 }).sort({ createdAt: 1, _id: 1 }).limit(request.limit).lean()) as DeliveryDoc[]
  let queued = 0
  let done = 0
  let next = 0
  const worker = async () => {
    while (next < docs.length) {
      const doc = docs[next++]!
      const { queued: n } = await redriveOne(domain, doc, now, REDRIVE_ACTIVE_WAIT_MS.batch) // awaited first: `queued += await …` would read queued before the await
      queued += n
      done++
      if (done % PROGRESS_EVERY === 0) domain.logger.info({ appDid, environment, done, of: docs.length, queued }, 'redrive: batch progress')
    }
  }
  await Promise.all(Array.from({ length: Math.min(BATCH_CONCURRENCY, docs.length) }, worker))
  domain.logger.info({ appDid, environment, matched: docs.length, queued }, 'redrive: batch done')
  return { ok: true, queued }
}
