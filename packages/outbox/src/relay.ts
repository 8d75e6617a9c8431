/**
 * The outbox relay (docs/events.md "Crash safety"): runs in each domain's process over that domain's outbox, reads
 * the events not yet relayed (oldest first), adds them to the `domain-events` queue with the event id as job id,
 * and only after the add succeeded marks them relayed. Dying between the two re-adds them on the next pass, which
 * BullMQ ignores (the job id exists) and the events domain could not turn into a second delivery anyway (the
 * delivery id derives from the event id): nothing is lost, nothing is doubled.
 *
 * A write in the same process wakes the relay at once (outboxWrites) and hands it the event, which the next pass
 * publishes without reading it back. Those events are marked relayed together: when `batchSize` of them wait, before
 * a scan, when the relay stops, or `markDelayMs` after the first (one update for many; a crash before it only
 * re-adds them). A poll scans for unrelayed events (writes of other processes, a failed pass): every `intervalMs`
 * while it finds some or a pass failed, backing off to `maxIntervalMs` while it finds none. One pass runs at a time.
 * Finding and marking filter on `relayed: false` or on `_id`, which FerretDB answers from an index.
 *
 * Redis may lose its data (a restart without persistence), or go back in time (a failover to a replica that was
 * behind, a restart that lost its last second of writes), with domain events still queued. The domain's relays keep a
 * marker in Redis, and each relay a count of its own publishes; a scan that finds the marker missing (lost, or the
 * first start) or its count older than it wrote, or a relay's first scan that finds the job of one of the domain's
 * newest relayed events gone (Redis went back while every relay restarted: none has a count to tell by), relays
 * again the events relayed in the last `replayWindowMs`: those already turned into deliveries are a no-op (the
 * delivery id derives from the event id).
 *
 * The outbox is a relay buffer, not the event log apps read (that is the events domain's deliveries): a scan also
 * deletes events relayed more than `retentionMs` ago (OUTBOX_RETENTION_MS, default 7 days, never less than the replay
 * window), at most once per `pruneIntervalMs`, so the collection does not grow forever. FerretDB has no TTL index.
 */
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import type { JobsOptions } from 'bullmq'
import { collectedGauge, CONNECTION_ERROR_LOG_INTERVAL_MS, logConnectionErrors, type ProcessMetrics } from '@svc/operations'
import Redis from 'ioredis'
import pTimeout from 'p-timeout'
import type { Logger } from 'pino'
import type { OutboxEvent, OutboxModel } from './outbox'
import { DOMAIN_EVENTS_QUEUE, producerQueue, queuePrefix, type DomainEventJob, type EventSource } from './queue'
import { OUTBOX_WRITTEN, outboxNamespace, outboxWrites } from './writes'

export const DEFAULT_RELAY_INTERVAL_MS = 500
/** the longest wait between two polls that found nothing */
export const DEFAULT_RELAY_MAX_INTERVAL_MS = 8000
export const DEFAULT_RELAY_BATCH_SIZE = 100
/** how long a published event of this process waits to be marked with others */
export const DEFAULT_RELAY_MARK_DELAY_MS = 250
/** after Redis lost its data, the events relayed this long before are relayed again */
export const DEFAULT_RELAY_REPLAY_WINDOW_MS = 24 * 3600_000
/** relayed events are deleted this long after they were relayed */
export const DEFAULT_OUTBOX_RETENTION_MS = 7 * 24 * 3600_000
/** how often a scan deletes what is past the retention */
export const DEFAULT_OUTBOX_PRUNE_INTERVAL_MS = 3600_000
/** events deleted per delete command, and the most one prune deletes (the next one goes on) */
const PRUNE_BATCH = 1000
const PRUNE_MAX_PER_RUN = 20 * PRUNE_BATCH

/** The most events one scan takes on (the rest by the next scan, at once). */
const SCAN_MAX = 10_000

/**
 * The domain's relay marker in Redis: there while Redis keeps what the relays published; missing (Redis lost its
 * data, or the first start, or a relay found that Redis went back in time and took it away) means jobs may be gone.
 */
export function relayAliveKey(redisPrefix: string, source: EventSource): string {
  // hash-tagged: one script writes it with a relay's count (relayCountKey), which a Redis Cluster wants in one slot
  return `${redisPrefix}outbox-relay:{${source}}`
}

/**
 * One relay process's own count of its publishes, written after each. Only that process writes it, so a value other
 * than the one it wrote last means Redis went back in time (a failover to a replica that was behind: replication keeps
 * the order of writes, so a replica without one of its jobs has an older count too). A count shared by the relays
 * could not tell: another process's publishes after the failover raised it back past what this one had seen.
 */
export function relayCountKey(redisPrefix: string, source: EventSource, relayId: string): string {
  return `${relayAliveKey(redisPrefix, source)}:relay:${relayId}`
}

/** a relay that published nothing for this long finds its count gone, and replays once (a no-op for the events) */
const RELAY_COUNT_TTL_SECONDS = 30 * 24 * 3600

/** how many of the domain's newest relayed events a relay's first scan looks for on the queue */
const NEWEST_CHECKED = 20
/** where the first scan looks for them first (a busy domain relayed some within it; else the replay window) */
const NEWEST_RECENT_MS = 10 * 60_000

/**
 * After a publish: the relay's count moves from ARGV[1] to ARGV[2]. Found otherwise, Redis went back in time: the
 * domain's marker goes, so the next scan of any relay of the domain replays (this one's, or one started since).
 */
const COUNT_PUBLISHED = `
local count = redis.call('GET', KEYS[2])
local wentBack = ARGV[1] ~= '0' and count ~= ARGV[1]
if wentBack then redis.call('DEL', KEYS[1]) end
redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[3])
if wentBack then return 1 end
return 0`

/**
 * The options of every `domain-events` job (its id is the event id). Completed jobs are kept for the board, 7 days
 * and at most 100,000 (by age alone, 500 events a second would keep 300 million, hundreds of GB, until Redis refused
 * every write); the processor is idempotent, so a replayed event whose job is gone makes no second delivery. A
 * failed job is kept and retried by the events workers' reconciler, so it keeps its last 3 stack traces: a retry
 * does not clear them, and an event that always fails gained 10 a run, every run.
 */
export const DOMAIN_EVENT_JOB_OPTIONS = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { age: 7 * 24 * 3600, count: 100_000 },
  removeOnFail: false,
  stackTraceLimit: 3,
} as const satisfies JobsOptions

export interface OutboxRelayOptions {
  /** the domain's own outbox */
  model: OutboxModel
  source: EventSource
  redisUrl: string
  /** REDIS_PREFIX; the queue lives under queuePrefix(redisPrefix) */
  redisPrefix: string
  logger: Logger
  /** polling period (default 500 ms); writes in this process wake the relay without waiting for it */
  intervalMs?: number
  /** polls that find nothing double the wait up to this (default 8 s, at least intervalMs) */
  maxIntervalMs?: number
  /** events per pass step (default 100) */
  batchSize?: number
  /** the longest a published event waits to be marked relayed with others (default 250 ms) */
  markDelayMs?: number
  /** after Redis lost its data, events relayed this long before are relayed again (default 24 h) */
  replayWindowMs?: number
  /** relayed events are deleted this long after they were relayed (default 7 days; at least replayWindowMs) */
  retentionMs?: number
  /** how often a scan deletes events past the retention (default 1 h; at the next scan while a backlog remains) */
  pruneIntervalMs?: number
  /** the most events one prune deletes (default 20,000) */
  pruneMaxPerRun?: number
  /** the process's `/metrics`: the relay adds its backlog (svc_outbox_unrelayed, svc_outbox_oldest_unrelayed_seconds) */
  metrics?: ProcessMetrics
  /**
   * Runs after a batch is on the queue and before it is marked relayed; a throw leaves the batch unmarked (as a
   * crash there would). For tests of the crash window.
   */
  beforeMark?: (eventIds: string[]) => void | Promise<void>
}

/** What a domain's process configures of its relay (the rest is the domain's own: its outbox, source and logger). */
export type OutboxRelaySettings = Pick<OutboxRelayOptions, 'redisUrl' | 'redisPrefix' | 'intervalMs' | 'retentionMs' | 'replayWindowMs'>

export interface OutboxRelay {
  /** waits for the running pass, then closes the queue and its Redis connection */
  stop(): Promise<void>
  /** relays everything unrelayed now (after the running pass) and returns how many events it relayed; throws on failure */
  drain(): Promise<number>
}

/** The `domain-events` job of an outbox event. */
export function domainEventJob(source: EventSource, event: Pick<OutboxEvent, '_id' | 'type' | 'environment' | 'appDid' | 'data' | 'occurredAt' | 'requestId'>): DomainEventJob {
  return {
    eventId: event._id,
    source,
    type: event.type,
    environment: event.environment,
    appDid: event.appDid,
    data: event.data,
    occurredAt: event.occurredAt.toISOString(),
    ...(event.requestId ? { requestId: event.requestId } : {}),
  }
}

/** While passes keep failing, their errors are logged at most this often (as a failing connection's are). */
const ERROR_LOG_INTERVAL_MS = CONNECTION_ERROR_LOG_INTERVAL_MS
/** A pass waits this long for Redis to (re)connect before it fails (stop() cuts the wait short). */
const CONNECT_WAIT_MS = 5_000
/** A publish without an answer in this time fails the pass; the batch stays unrelayed (publishing it again is a no-op). */
const PUBLISH_TIMEOUT_MS = 10_000
/** stop() gives the queue this long to close before it drops the connection. */
const CLOSE_TIMEOUT_MS = 5_000

/** `p`, or a rejection after `ms` (`p` may never settle: a publish to a Redis that does not answer). */
function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return pTimeout(p, { milliseconds: ms, message: `${what}: no answer within ${ms} ms` })
}

export function startOutboxRelay(opts: OutboxRelayOptions): OutboxRelay {
  const intervalMs = opts.intervalMs ?? DEFAULT_RELAY_INTERVAL_MS
  const maxIntervalMs = Math.max(intervalMs, opts.maxIntervalMs ?? DEFAULT_RELAY_MAX_INTERVAL_MS)
  const batchSize = opts.batchSize ?? DEFAULT_RELAY_BATCH_SIZE
  const markDelayMs = opts.markDelayMs ?? DEFAULT_RELAY_MARK_DELAY_MS
  const replayWindowMs = opts.replayWindowMs ?? DEFAULT_RELAY_REPLAY_WINDOW_MS
  const retentionMs = opts.retentionMs ?? DEFAULT_OUTBOX_RETENTION_MS
  const pruneIntervalMs = opts.pruneIntervalMs ?? DEFAULT_OUTBOX_PRUNE_INTERVAL_MS
  const pruneMaxPerRun = opts.pruneMaxPerRun ?? PRUNE_MAX_PER_RUN
  // an event the replay may relay again must still be there
  if (!(retentionMs >= replayWindowMs)) throw new Error('outbox relay: retentionMs must be at least replayWindowMs')
  const aliveKey = relayAliveKey(opts.redisPrefix, opts.source)
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new Error('outbox relay: batchSize must be a positive integer')
  if (!(intervalMs > 0)) throw new Error('outbox relay: intervalMs must be positive')
  const log = opts.logger.child({ component: 'outbox-relay', source: opts.source })
  const namespace = outboxNamespace(opts.model)

  // A producer connection: commands fail (and the pass is retried) rather than queue up while Redis is away; a
  // connection attempt still under way when the relay stops is dropped quickly.
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: 3, disconnectTimeout: 200 })
  /** aborted by stop(): a pass waiting for Redis to come back gives up */
  const stopping = new AbortController()
  const redisReady = async (): Promise<void> => {
    if (redis.status !== 'ready') await bounded(once(redis, 'ready', { signal: stopping.signal }), CONNECT_WAIT_MS, 'connecting to Redis')
  }
  /** a publish that has not answered yet (after its pass gave up on it): no other starts before it settles */
  let publishing: Promise<unknown> | null = null
  const queue = producerQueue<DomainEventJob>(DOMAIN_EVENTS_QUEUE, redis, queuePrefix(opts.redisPrefix))
  logConnectionErrors(queue, log, 'outbox relay: queue connection error')

  // what waits to be relayed, read when scraped: after an outage of Redis or the database, whether all of it has left
  if (opts.metrics) {
    const labels = { source: opts.source }
    // one read for both gauges of a scrape (prom-client collects them side by side)
    let reading: Promise<{ count: number; oldestSeconds: number }> | null = null
    const backlog = () =>
      (reading ??= opts.model
        .find({ relayed: false }, { occurredAt: 1 })
        .lean<Pick<OutboxEvent, 'occurredAt'>[]>()
        .then((due) => {
          const now = Date.now()
          return { count: due.length, oldestSeconds: Math.max(0, (now - due.reduce((min, e) => Math.min(min, e.occurredAt.getTime()), now)) / 1000) }
        })
        .finally(() => {
          reading = null
        }))
    collectedGauge(opts.metrics, 'svc_outbox_unrelayed', 'domain events written and not yet on the domain-events queue', ['source'] as const, async (gauge) => {
      gauge.set(labels, (await backlog()).count)
    })
    collectedGauge(opts.metrics, 'svc_outbox_oldest_unrelayed_seconds', 'how long the oldest domain event not yet relayed has waited (0: none)', ['source'] as const, async (gauge) => {
      gauge.set(labels, (await backlog()).oldestSeconds)
    })
  }

  /** this relay's publishes, as its count in Redis (relayCountKey) should read */
  const countKey = relayCountKey(opts.redisPrefix, opts.source, randomUUID())
  let published = 0

  /** Publishes events (their marks are the caller's), then counts the publish in Redis. */
  const publish = async (batch: OutboxEvent[]): Promise<void> => {
    // BullMQ waits for a connection forever: wait a bounded time here instead, so a pass (and stop) always ends
    await redisReady()
    if (publishing) throw new Error('the previous publish to domain-events has not answered yet')
    const add = queue.addBulk(
      batch.map((event) => ({
        name: event.type,
        data: domainEventJob(opts.source, event),
        opts: { ...DOMAIN_EVENT_JOB_OPTIONS, jobId: event._id },
      })),
    )
    const settled = add.then(
      () => (publishing = null),
      () => (publishing = null),
    )
    publishing = settled
    await bounded(add, PUBLISH_TIMEOUT_MS, 'publishing to domain-events')
    // the marker is never made here: one Redis lost stays missing for the next scan to see and replay
    const wentBack = await redis.eval(COUNT_PUBLISHED, 2, aliveKey, countKey, String(published), String(published + 1), RELAY_COUNT_TTL_SECONDS)
    published++
    if (wentBack === 1) log.warn({ published }, 'outbox relay: Redis went back in time (this relay\'s count of its publishes is older); the next scan relays recent events again')
  }

  /**
   * Marks published events relayed: one by `_id`, more with one update narrowed by `relayed: false` (both answered
   * from an index on FerretDB and MongoDB). A repeat only moves relayedAt (the event is on the queue either way).
   */
  const mark = async (ids: string[]): Promise<void> => {
    if (ids.length === 0) return
    await opts.beforeMark?.(ids)
    const $set = { relayed: true, relayedAt: new Date() }
    if (ids.length === 1) await opts.model.updateOne({ _id: ids[0] }, { $set })
    else await opts.model.updateMany({ relayed: false, _id: { $in: ids } }, { $set })
  }

  /** published events of this process not marked yet, in the order they were published */
  let unmarked: string[] = []
  let markTimer: NodeJS.Timeout | undefined
  let markDue = false
  const flushMarks = async (): Promise<void> => {
    clearTimeout(markTimer)
    markTimer = undefined
    markDue = false
    const ids = unmarked
    unmarked = []
    // a failed mark leaves the events unrelayed in the outbox: the next scan publishes them again (a no-op) and marks them
    await mark(ids)
  }

  /**
   * The scan's events: the oldest unrelayed ones, at most SCAN_MAX, named once per pass. FerretDB hands
   * `relayed: false` to PostgreSQL but sorts (and limits) in its own process, so a query per batch would decode
   * the whole unrelayed set once per batch: quadratic in a backlog (a day's events replayed after Redis lost its
   * data). Their documents are then read by `_id` a batch at a time.
   */
  const listUnrelayed = async (): Promise<string[]> => {
    const due = await opts.model.find({ relayed: false }, { _id: 1, occurredAt: 1 }).lean<Pick<OutboxEvent, '_id' | 'occurredAt'>[]>()
    due.sort((a, b) => a.occurredAt.getTime() - b.occurredAt.getTime() || a._id.localeCompare(b._id))
    return due.slice(0, SCAN_MAX).map((event) => event._id)
  }

  /** One batch of the scan, by id: those still unrelayed published, then marked (each by its `_id`). */
  const relayBatch = async (ids: string[]): Promise<number> => {
    const docs = await Promise.all(ids.map((id) => opts.model.findById(id).lean<OutboxEvent>()))
    const batch = docs.filter((event): event is OutboxEvent => event !== null && !event.relayed)
    if (batch.length === 0) return 0
    await publish(batch)
    await opts.beforeMark?.(batch.map((event) => event._id))
    const $set = { relayed: true, relayedAt: new Date() }
    await Promise.all(batch.map((event) => opts.model.updateOne({ _id: event._id }, { $set })))
    return batch.length
  }

  /**
   * The events written in this process, published as they were handed over (read by `_id` when only the id was);
   * their marks wait to be written together.
   */
  const relayWritten = async (written: Map<string, OutboxEvent | null>): Promise<number> => {
    const events = await Promise.all(
      [...written].map(([id, event]) => event ?? opts.model.findById(id).lean<OutboxEvent>().then((e) => (e && !e.relayed ? e : null))),
    )
    const pending = events.filter((event): event is OutboxEvent => event !== null)
    pending.sort((a, b) => a.occurredAt.getTime() - b.occurredAt.getTime() || a._id.localeCompare(b._id))
    for (let i = 0; i < pending.length; i += batchSize) {
      const batch = pending.slice(i, i + batchSize)
      await publish(batch)
      unmarked.push(...batch.map((event) => event._id))
      if (unmarked.length >= batchSize) await flushMarks()
    }
    if (unmarked.length > 0 && !markTimer && !stopped) {
      markTimer = setTimeout(() => {
        markDue = true
        wake()
      }, markDelayMs)
      markTimer.unref()
    }
    return pending.length
  }

  /** Once per start: events written before `relayed` existed get it from relayedAt. */
  let upgraded = false
  const upgradeOutbox = async (): Promise<void> => {
    if (upgraded) return
    await opts.model.updateMany({ relayed: { $exists: false }, relayedAt: null }, { $set: { relayed: false } })
    await opts.model.updateMany({ relayed: { $exists: false } }, { $set: { relayed: true } })
    upgraded = true
  }

  let newestChecked = false
  /**
   * Whether the job of one of the domain's newest relayed events is gone from the queue: jobs are kept 7 days once
   * done, so Redis went back past its publish (a relay living through that tells by its count; one started since
   * cannot). Once per relay, at its first scan. A job the events domain removed (a failed one whose delivery exists)
   * also counts: the replay is then a no-op.
   */
  const newestJobsGone = async (): Promise<boolean> => {
    const since = (ms: number) => opts.model.find({ relayed: true, relayedAt: { $gte: new Date(Date.now() - ms) } }, { _id: 1, relayedAt: 1 }).lean<Pick<OutboxEvent, '_id' | 'relayedAt'>[]>()
    let relayed = await since(NEWEST_RECENT_MS)
    if (relayed.length === 0) relayed = await since(replayWindowMs)
    relayed.sort((a, b) => (b.relayedAt?.getTime() ?? 0) - (a.relayedAt?.getTime() ?? 0))
    const states = await Promise.all(relayed.slice(0, NEWEST_CHECKED).map((event) => queue.getJobState(event._id)))
    return states.includes('unknown')
  }

  /**
   * The domain's marker missing (Redis lost its data, the first start, or a relay's publish found Redis gone back in
   * time), or this relay's count of its publishes older than it wrote (Redis went back in time: a failover to a
   * replica that was behind), or at this relay's first scan a newest relayed event's job gone: domain events
   * published before may be gone with it, so those relayed within the replay window become unrelayed again, for this
   * scan, whichever relay of the domain published them. The marker and the count are written only once they are: a
   * pass that fails in between (the database away) replays at its retry. Two relays replaying at once publish each
   * event once (its id is the job id).
   */
  const replayIfRedisLost = async (): Promise<void> => {
    await redisReady()
    const [marker, count] = await redis.mget(aliveKey, countKey)
    const wentBack = published > 0 && count !== String(published)
    const jobsGone = marker !== null && !wentBack && !newestChecked && (await newestJobsGone())
    if (marker !== null && !wentBack && !jobsGone) {
      newestChecked = true
      return
    }
    const since = new Date(Date.now() - replayWindowMs)
    const res = await opts.model.updateMany({ relayed: true, relayedAt: { $gte: since } }, { $set: { relayed: false } })
    // a marker from before the count (a sequence, or a date) stays as it is: any value means Redis kept its data
    await redis.set(aliveKey, '1', 'NX')
    if (published > 0) await redis.set(countKey, String(published), 'EX', RELAY_COUNT_TTL_SECONDS)
    newestChecked = true
    if (res.modifiedCount > 0) {
      const why = wentBack
        ? `Redis went back in time (this relay's count of its publishes read ${count ?? 'missing'}, not ${published})`
        : jobsGone
          ? 'Redis went back in time (the job of one of the newest relayed events is gone)'
          : 'Redis lost its data (or first start)'
      log.warn({ events: res.modifiedCount, since }, `outbox relay: ${why}; relaying recent events again`)
    }
  }

  /**
   * Deletes events relayed before the retention, by `_id` in batches, when the last prune is `pruneIntervalMs` old,
   * or at the next scan when the last one stopped at its most: a domain relaying more than that an hour (5.6 events
   * a second) would otherwise keep the rest for ever. Only relayed ones: an event that waits for Redis, however old,
   * stays until it is on the queue.
   */
  let lastPrune = 0
  const pruneIfDue = async (): Promise<void> => {
    if (Date.now() - lastPrune < pruneIntervalMs) return
    lastPrune = Date.now()
    const before = new Date(Date.now() - retentionMs)
    let deleted = 0
    while (deleted < pruneMaxPerRun && !stopped) {
      // occurredAt ≤ relayedAt: its condition narrows the read to the outbox's index
      const old = await opts.model
        .find({ relayed: true, occurredAt: { $lt: before }, relayedAt: { $lt: before } }, { _id: 1 })
        .limit(Math.min(PRUNE_BATCH, pruneMaxPerRun - deleted))
        .lean<Pick<OutboxEvent, '_id'>[]>()
      if (old.length === 0) break
      const res = await opts.model.deleteMany({ _id: { $in: old.map((e) => e._id) }, relayed: true })
      deleted += res.deletedCount
      if (old.length < PRUNE_BATCH) break
    }
    // stopped at its most: a backlog remains, so the next scan goes on with it
    if (deleted >= pruneMaxPerRun) lastPrune = 0
    if (deleted > 0) log.info({ deleted, relayedBefore: before }, 'outbox: deleted events relayed before the retention')
  }

  /**
   * Every event unrelayed when the pass started, oldest first, in batches. A backlog beyond SCAN_MAX is finished by
   * the next passes, which come at once, so this process's own writes are published in between.
   */
  const relayAll = async (): Promise<number> => {
    await upgradeOutbox()
    await flushMarks()
    await replayIfRedisLost()
    const ids = await listUnrelayed()
    let total = 0
    for (let i = 0; i < ids.length && !stopped; i += batchSize) total += await relayBatch(ids.slice(i, i + batchSize))
    if (ids.length === SCAN_MAX) {
      scanDue = true
      wake()
    }
    if (total > 0) log.info({ relayed: total }, 'outbox events relayed')
    // a failed prune costs the relay nothing: the next one, an interval later, deletes what it left
    await pruneIfDue().catch((err: unknown) => log.warn({ err }, 'outbox: deleting events past the retention failed'))
    return total
  }

  // Passes run one after another on this chain.
  let chain: Promise<unknown> = Promise.resolve()
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn)
    chain = next.catch(() => undefined)
    return next
  }

  let stopped = false
  let passQueued = false
  let failingSince: number | null = null
  let lastErrorLog = 0
  /** events written in this process since the last pass took them (null: only the id was handed over) */
  let written = new Map<string, OutboxEvent | null>()
  /** the next pass scans (the first one does: events an earlier process left) */
  let scanDue = true
  let pollDelay = intervalMs
  let timer: NodeJS.Timeout | undefined
  const schedulePoll = () => {
    if (stopped) return
    clearTimeout(timer)
    timer = setTimeout(() => {
      scanDue = true
      wake()
    }, pollDelay)
    timer.unref()
  }

  /** Asks for a pass; wake-ups while one waits to start are the same pass. */
  const wake = () => {
    if (stopped || passQueued) return
    passQueued = true
    void exclusive(async () => {
      passQueued = false
      // a pass asked for before stop() still publishes what was handed to it (a request that finished while the
      // process drained), so those events leave now rather than at the next start's scan
      if (stopped && written.size === 0) return
      const taken = written
      written = new Map()
      const scan = scanDue && !stopped
      scanDue = false
      try {
        let relayed = taken.size > 0 ? await relayWritten(taken) : 0
        if (relayed > 0) log.info({ relayed }, 'outbox events relayed')
        if (markDue || (stopped && unmarked.length > 0)) await flushMarks()
        if (scan) {
          relayed = await relayAll()
          // polls that find nothing back off; one that found something (another process writes) keeps the pace
          pollDelay = relayed > 0 ? intervalMs : Math.min(pollDelay * 2, maxIntervalMs)
          schedulePoll()
        }
        if (failingSince !== null) log.info({ failingForMs: Date.now() - failingSince }, 'outbox relay recovered')
        failingSince = null
        lastErrorLog = 0
      } catch (err) {
        // the events stay unrelayed: the next poll (soon) scans for them
        pollDelay = intervalMs
        schedulePoll()
        const now = Date.now()
        failingSince ??= now
        if (now - lastErrorLog >= ERROR_LOG_INTERVAL_MS) {
          lastErrorLog = now
          log.error({ err, failingForMs: now - failingSince }, 'outbox relay pass failed; retrying at the next pass')
        }
      }
    })
  }

  const onWrite = (outbox: string, eventId?: string, event?: OutboxEvent) => {
    if (outbox !== namespace) return
    if (typeof eventId === 'string') written.set(eventId, event ?? written.get(eventId) ?? null)
    else scanDue = true
    wake()
  }
  outboxWrites.on(OUTBOX_WRITTEN, onWrite)
  wake()

  return {
    drain: () => exclusive(relayAll),
    async stop() {
      if (stopped) return
      stopped = true
      clearTimeout(timer)
      outboxWrites.off(OUTBOX_WRITTEN, onWrite)
      // a pass waiting for Redis to come back gives up; one that is publishing or marking finishes
      stopping.abort(new Error('the relay is stopping'))
      await chain
      // what this process published is marked before it goes (a failure only means a repeat publish at the next start)
      await flushMarks().catch((err: unknown) => log.warn({ err }, 'outbox relay: could not mark the last events relayed'))
      await bounded(queue.close(), CLOSE_TIMEOUT_MS, 'closing the queue').catch(() => undefined)
      redis.disconnect()
    },
  }
}
