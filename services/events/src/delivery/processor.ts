/**
 * One `webhook-deliveries` job = one attempt to deliver (docs/events.md: "Delivery states", "Attempt log",
 * "Crash safety"). On the happy path an attempt costs the database one write:
 *
 *   1. the job says what to send (the envelope, the app environment, the run and the attempt's number): nothing is
 *      read. Only a job whose last worker died mid-attempt (the job still names an attempt in flight), or a job of an
 *      earlier version, reads the delivery: delivered already (or gone) → done, nothing sent; an attempt in flight
 *      that the delivery has not counted is logged `interrupted` with the next outcome;
 *   2. read the app environment's endpoint through the gateway; paused → `held`, the job goes back to delayed
 *      without consuming an attempt, and nothing is logged as an attempt (the re-checks back off, and only the first
 *      writes the delivery: hold);
 *   3. name the attempt in the job (Redis) before anything is sent, then send on the channel;
 *   4. the outcome is one write to the delivery: its status, attemptCount and lastAttemptAt, with the attempt
 *      appended to its log. 2xx → delivered. Anything else → the attempt failed; the next wait comes from the
 *      schedule (lengthened by a Retry-After up to the next step) and is handed to BullMQ through the thrown
 *      AttemptFailedError (the workers' backoffStrategy reads it), or, after the run's last attempt, the delivery is
 *      `failed`.
 *
 * The worker holding the job's lock is the delivery's only writer while it runs (a redrive waits for an active job
 * to finish), so every write names the delivery by `_id` (on FerretDB only such filters are answered from an index:
 * docs/events.md, "Performance on FerretDB"); the outcome's write adds a guard on `attemptCount` for the job whose
 * data fell behind its delivery (writeOutcome).
 */
import { DelayedError, type Job } from 'bullmq'
import type { Logger } from 'pino'
import type { Agent } from 'undici'
import type { DeliverySettings } from '@svc/config'
import type { MintServiceJwtParams } from '@svc/service-auth'
import { MAX_ATTEMPTS, nextDelayMs } from '../domain/schedule'
import { ATTEMPT_LOG_LIMIT, type AttemptDoc, type Channel, type DeliveryDoc, type EventsModels } from '../models'
import type { DeliveryJob, UnrecordedAttempt } from '../queues'
import { RECEIVERS_KEEP_IDS_MS, sendBefore } from '../domain/deliveries'
import { receiveEventUrl, webhookRequest, xrpcRequest } from './channels'
import type { SigningSecretsReader } from './app-environment-cache'
import type { EndpointHealth } from './endpoint-health'
import type { EndpointClient } from './endpoint'
import { createFairShare, deferDelayMs } from './fair-share'
import { parseRetryAfter } from './retry-after'
import { isDelivered, isDuplicateDeliveryAnswer, sendAttempt, type AttemptResult, type OutgoingRequest } from './transport'
import type { Environment } from '@svc/vocabulary'

export const INTERRUPTED_ERROR = 'the worker stopped during this attempt'
export const NOT_CONFIGURED_ERROR = 'no webhook or receiver configured'
export const TOO_LATE_ERROR = 'not sent: first sent more than 30 days ago, receivers may no longer know its id (it would be processed twice)'
export const HELD_TOO_LONG_ERROR = 'not sent: held longer than DELIVERY_HOLD_MAX_MS while the webhook was paused or disabled (redrive it once the webhook is back)'

/** A held delivery's re-checks double up to this many times DELIVERY_HOLD_RECHECK_MS (64 × 60 s: about an hour). */
export const HOLD_RECHECK_MAX_FACTOR = 64

/**
 * The wait before a held delivery's next re-check, after `holds` re-checks that found its endpoint paused:
 * holdRecheckMs, then twice that, … up to HOLD_RECHECK_MAX_FACTOR times it.
 */
export function holdRecheckDelayMs(holdRecheckMs: number, holds: number): number {
  return holdRecheckMs * Math.min(2 ** Math.max(0, holds), HOLD_RECHECK_MAX_FACTOR)
}

/** A failed attempt; `delayMs` is the wait before the next one (null: it was the run's last). */
export class AttemptFailedError extends Error {
  override readonly name: string = 'AttemptFailedError'
  constructor(
    message: string,
    readonly delayMs: number | null,
  ) {
    super(message)
  }
}

/**
 * The run's last attempt failed: BullMQ fails the job at once by this name (an UnrecoverableError), whatever attempts
 * it counts left (it does not count an attempt a dead worker left, which the run does).
 */
export class LastAttemptFailedError extends AttemptFailedError {
  override readonly name = 'UnrecoverableError'
}

/** What a delivery job that threw counts as in `svc_delivery_jobs_total`: the run's end, a retry, or an error outside an attempt. */
export function failedPickUpOutcome(err: unknown): 'failed' | 'retrying' | 'error' {
  return err instanceof LastAttemptFailedError ? 'failed' : err instanceof AttemptFailedError ? 'retrying' : 'error'
}

/**
 * The workers' `settings.backoffStrategy`: the delay the processor computed (and recorded as nextAttemptAt); for any
 * other error (the database was unreachable, …) the plain schedule.
 */
export function deliveryBackoff(scale: number) {
  return (attemptsMade: number, _type?: string, err?: Error): number => {
    if (err instanceof AttemptFailedError && err.delayMs !== null) return err.delayMs
    return nextDelayMs(Math.max(1, attemptsMade), { scale }) ?? 0
  }
}

export interface DeliveryProcessorDeps {
  models: EventsModels
  logger: Logger
  delivery: DeliverySettings
  /** the app environment's signing secrets that sign now, newest first */
  signingSecrets: SigningSecretsReader
  /** the XRPC channel's issuer */
  service: { did: string; keypair: MintServiceJwtParams['keypair'] }
  endpoints: EndpointClient
  /** counts an attempt deferred because its receiver is slow (fair-share.ts), for /metrics */
  onDeferred?: () => void
  /** an attempt that went out to the receiver: how long it took, for /metrics */
  onAttemptSent?: (attempt: { channel: Channel; environment: Environment; delivered: boolean; durationMs: number; lateMs: number | null }) => void
  /** one guarded agent per environment (transport.ts) */
  agents: Record<Environment, Agent>
  /** when to disable an endpoint (410, or failing for days) */
  health: EndpointHealth
}

export type ProcessOutcome = 'delivered' | 'already-delivered' | 'gone' | 'too-late' | 'held-too-long'

type Prepared = { request: OutgoingRequest } | { error: string }

function httpUrl(raw: string): string | null {
  try {
    const url = new URL(raw)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.toString() : null
  } catch {
    return null
  }
}

/** One line per attempt in the job's log, shown in the operators' board (best effort: Redis trouble never fails an attempt). */
function boardLog(job: Job<DeliveryJob>, line: string): Promise<unknown> {
  return job.log(line).catch(() => undefined)
}

/** What one pick-up of a job attempts. */
interface Attempting {
  id: string
  appDid: string
  environment: Environment
  body: string
  run: number
  /** this attempt's number */
  number: number
  /** earlier attempts whose workers died, to be logged `interrupted` with this attempt's outcome */
  interrupted: UnrecordedAttempt[]
  /** attempts of the run made before the job was re-created (the reconciler's) */
  attemptsBefore: number
  /** the number of the run's first attempt (null for a job made before jobs carried it) */
  firstOfRun: number | null
  /**
   * for a delivery that may have reached a receiver: no attempt is sent from this time on (domain/deliveries.ts,
   * sendBefore); set by the first attempt that may have reached one
   */
  sendBefore: number | null
  /** when this attempt was due (ms since the epoch), when the job says (dueAt in queues.ts) */
  dueAt: number | null
  /** the request that caused the delivery's event, when known: the `reqId` of the attempt's log lines */
  requestId: string | null
}

/** The job's data for the attempt after `a` (or `a` itself again, when `next` is its number). */
function jobData(a: Attempting, next: number, inFlight: UnrecordedAttempt | null, interrupted: UnrecordedAttempt[]): DeliveryJob {
  const { id: deliveryId, appDid, environment, body, run, attemptsBefore, firstOfRun, sendBefore, dueAt, requestId } = a
  return { deliveryId, appDid, environment, body, run, next, inFlight, interrupted, ...(attemptsBefore > 0 ? { attemptsBefore } : {}), ...(firstOfRun !== null ? { firstOfRun } : {}), sendBefore, ...(dueAt !== null ? { dueAt } : {}), ...(requestId !== null ? { requestId } : {}) }
}

/**
 * How long after it was due an attempt starts: from the time its job names (a failed attempt's next) or, for a job's
 * first pick-up, from when it was queued (with its delay). Null when it waited on the app, not on the workers (held
 * while paused, deferred while its receiver was slow), or when the job does not say (made before jobs carried dueAt).
 */
export function attemptLateMs(job: Pick<Job<DeliveryJob>, 'data' | 'timestamp' | 'opts' | 'attemptsMade'>, startedAt: number): number | null {
  const { dueAt, heldSince, deferrals } = job.data
  if (heldSince !== undefined || (deferrals ?? 0) > 0) return null
  const due = dueAt ?? (job.attemptsMade === 0 ? job.timestamp + (job.opts.delay ?? 0) : null)
  return due === null ? null : Math.max(0, startedAt - due)
}

/**
 * The URL as the job keeps it: the operators' board shows job data, and a query may carry the app's own token (the
 * delivery's log, the app's record, keeps the whole URL of every attempt whose outcome is known).
 */
function withoutQuery(url: string | null): string | null {
  if (url === null) return null
  const parsed = new URL(url)
  return parsed.search === '' ? url : `${parsed.origin}${parsed.pathname}`
}

function interruptedEntry(a: UnrecordedAttempt, run: number): AttemptDoc {
  return {
    number: a.number,
    run,
    channel: a.channel,
    url: a.url,
    attemptedAt: new Date(a.attemptedAt),
    durationMs: null,
    statusCode: null,
    outcome: 'interrupted',
    error: INTERRUPTED_ERROR,
    responseExcerpt: null,
    nextAttemptAt: null,
  }
}

/**
 * The earliest of these attempts that may have reached the receiver: an interrupted one that had somewhere to go (its
 * worker may have sent it before it stopped; one with no URL had no endpoint), or the attempt just made when
 * `sentAt` is given; null when none may have.
 */
function firstReachedOf(interrupted: UnrecordedAttempt[], sentAt: Date | null = null): Date | null {
  const times = [...interrupted.filter((i) => i.url !== null).map((i) => Date.parse(i.attemptedAt)), ...(sentAt ? [sentAt.getTime()] : [])]
  return times.length > 0 ? new Date(Math.min(...times)) : null
}

/** The `$min` that records when the delivery first may have reached a receiver (nothing when `at` is null). */
function reachedUpdate(at: Date | null) {
  return at ? { $min: { firstReachedAt: at } } : {}
}

/** `sendBefore` once an attempt at `at` may have reached the receiver: 30 days on, unless it was earlier already. */
function sendBeforeAfter(current: number | null, at: Date | null): number | null {
  if (!at) return current
  const until = at.getTime() + RECEIVERS_KEEP_IDS_MS
  return current === null ? until : Math.min(current, until)
}

/**
 * The delivery's update: `$set`, and `entries` appended to its log when there are any (MongoDB keeps the newest
 * ATTEMPT_LOG_LIMIT; FerretDB 1.x ignores $slice: makeRoomInAttemptLog trims there).
 */
function withAttempts($set: Record<string, unknown>, entries: AttemptDoc[]) {
  return entries.length > 0 ? { $set, $push: { attempts: { $each: entries, $slice: -ATTEMPT_LOG_LIMIT } } } : { $set }
}

/**
 * The attempts a job names that its delivery has not logged (a worker died with them in flight), as log entries;
 * `attemptCount` is what the delivery has counted.
 */
function unrecorded(data: DeliveryJob, attemptCount: number): UnrecordedAttempt[] {
  const named = [...(data.interrupted ?? []), ...(data.inFlight ? [data.inFlight] : [])]
  return named.filter((a) => a.number > attemptCount).sort((x, y) => x.number - y.number)
}

export function createDeliveryProcessor(deps: DeliveryProcessorDeps) {
  const { models, delivery: settings } = deps
  const log = deps.logger
  const share = createFairShare({
    slowMs: settings.slowMs,
    slowAppConcurrency: settings.slowAppConcurrency,
    onSlow: (key) => {
      const [appDid, environment] = key.split(' ')
      log.warn({ appDid, environment, slowMs: settings.slowMs, slots: settings.slowAppConcurrency }, "event receiver slow: its attempts hold at most their share of this worker's slots for a minute")
    },
  })

  /**
   * What this pick-up attempts: from the job alone, or, when the job names an attempt in flight (its worker died
   * before it learned the outcome, or before it wrote it) or is of an earlier version, from the delivery.
   */
  async function resume(job: Job<DeliveryJob>): Promise<Attempting | 'gone' | 'already-delivered'> {
    const data = job.data
    const attemptsBefore = data.attemptsBefore ?? 0
    // (a redrive's run queued before jobs carried sendBefore reads the delivery for it)
    if (!data.inFlight && data.body !== undefined && data.appDid && data.environment && data.run && data.next && (data.sendBefore !== undefined || data.run === 1)) {
      return { id: data.deliveryId, appDid: data.appDid, environment: data.environment, body: data.body, run: data.run, number: data.next, interrupted: data.interrupted ?? [], attemptsBefore, firstOfRun: data.firstOfRun ?? null, sendBefore: data.sendBefore ?? null, dueAt: data.dueAt ?? null, requestId: data.requestId ?? null }
    }
    const d = (await models.Delivery.findById(data.deliveryId, { attempts: 0 }).lean()) as DeliveryDoc | null
    if (!d) return 'gone'
    if (d.status === 'delivered') return 'already-delivered'
    const interrupted = unrecorded(data, d.attemptCount ?? 0)
    for (const a of interrupted) log.warn({ deliveryId: d._id, number: a.number }, 'delivery attempt interrupted by a worker that stopped')
    const last = interrupted.at(-1)?.number ?? d.attemptCount ?? 0
    // the attempts the dead workers may have sent count as reaching the receiver, from when they were made
    const until = sendBeforeAfter(sendBefore(d), firstReachedOf(interrupted))
    return { id: d._id, appDid: d.appDid, environment: d.environment as Environment, body: d.body, run: d.run ?? 1, number: last + 1, interrupted, attemptsBefore, firstOfRun: data.firstOfRun ?? null, sendBefore: until, dueAt: data.dueAt ?? null, requestId: d.requestId ?? data.requestId ?? null }
  }

  /**
   * Paused: `held` (with the log of attempts that died), the job back to delayed; nothing sent, nothing counted. The
   * re-checks back off (holdRecheckDelayMs, counted in the job's `holds`), and only the first writes the delivery: a
   * re-check of a delivery already held costs one Redis write (the count) and no database write. Its `nextAttemptAt`
   * stays the first re-check's; once the app unpauses, the reconciler promotes the re-check (release-held.ts).
   */
  async function hold(job: Job<DeliveryJob>, token: string | undefined, a: Attempting): Promise<never> {
    const holds = job.data.holds ?? 0
    const recheckAt = new Date(Date.now() + holdRecheckDelayMs(settings.holdRecheckMs, holds))
    const dead = a.interrupted.map((i) => interruptedEntry(i, a.run))
    if (holds === 0 || dead.length > 0) {
      const held = holds === 0 ? { status: 'held', nextAttemptAt: recheckAt } : { status: 'held' }
      const open = { _id: a.id, status: { $ne: 'delivered' as const } }
      const reached = reachedUpdate(firstReachedOf(a.interrupted))
      const logged = dead.length > 0 && (await models.Delivery.updateOne({ ...open, attemptCount: { $lt: dead[0]!.number } }, { ...withAttempts({ ...held, attemptCount: a.number - 1 }, dead), ...reached })).matchedCount > 0
      // without the dead attempts when the delivery counted past them (the job was behind: see writeOutcome)
      if (!logged) await models.Delivery.updateOne(open, { $set: held, ...reached })
    }
    await job.updateData({ ...jobData(a, a.number, null, []), holds: holds + 1, heldSince: job.data.heldSince ?? Date.now() })
    log.debug({ deliveryId: a.id, holds: holds + 1, recheckAt }, 'delivery held: the webhook is paused')
    if (!token) throw new Error('a held delivery needs the job token')
    await job.moveToDelayed(recheckAt.getTime(), token)
    throw new DelayedError()
  }

  /**
   * The run's attempts are spent before this pick-up sends one (its last was cut off by a worker that stopped, or
   * held and logged `interrupted`): the run ends `failed` without a 15th, and the job fails as after a last attempt.
   */
  async function endSpentRun(a: Attempting): Promise<never> {
    const dead = a.interrupted.map((i) => interruptedEntry(i, a.run))
    const open = { _id: a.id, status: { $in: ['pending' as const, 'held' as const] } }
    const ended = { status: 'failed', failedAt: new Date(), nextAttemptAt: null }
    const reached = reachedUpdate(firstReachedOf(a.interrupted))
    const logged = dead.length > 0 && (await models.Delivery.updateOne({ ...open, attemptCount: { $lt: dead[0]!.number } }, { ...withAttempts({ ...ended, attemptCount: dead.at(-1)!.number, lastError: INTERRUPTED_ERROR }, dead), ...reached })).matchedCount > 0
    if (!logged) await models.Delivery.updateOne(open, { $set: ended, ...reached })
    log.warn({ deliveryId: a.id, appDid: a.appDid, environment: a.environment, run: a.run }, `delivery run ended: its ${MAX_ATTEMPTS} attempts are spent, the last one interrupted`)
    throw new LastAttemptFailedError(`no attempts left in this run (the last one was interrupted): failed, waiting for a redrive`, null)
  }

  /**
   * Not to be sent any more (too late, see sendBefore; or held past DELIVERY_HOLD_MAX_MS): the run ends `failed`
   * without an attempt, with `lastError` saying why (the attempts its dead workers left in flight logged `interrupted`).
   */
  async function endUnsent<O extends ProcessOutcome>(a: Attempting, outcome: O, lastError: string, why: string): Promise<O> {
    const dead = a.interrupted.map((i) => interruptedEntry(i, a.run))
    const counted = dead.length > 0 ? { attemptCount: dead.at(-1)!.number } : {}
    const open = { _id: a.id, status: { $in: ['pending' as const, 'held' as const] } }
    const reached = reachedUpdate(firstReachedOf(a.interrupted))
    const ended = { ...withAttempts({ status: 'failed', failedAt: new Date(), nextAttemptAt: null, lastError, ...counted }, dead), ...reached }
    const logged = dead.length > 0 && (await models.Delivery.updateOne({ ...open, attemptCount: { $lt: dead[0]!.number } }, ended)).matchedCount > 0
    if (!logged) await models.Delivery.updateOne(open, { $set: { status: 'failed', failedAt: new Date(), nextAttemptAt: null, lastError }, ...reached })
    log.warn({ deliveryId: a.id, appDid: a.appDid, environment: a.environment, run: a.run }, `delivery run ended unsent: ${why}`)
    return outcome
  }

  /**
   * The app environment's receiver is slow and its attempts hold their share of this process's slots (fair-share.ts):
   * the job goes back to delayed, nothing sent or counted, with this attempt as resumed (the attempts dead workers
   * left stay in the job, to be logged `interrupted` with its outcome) and the count of waits in a row, which
   * lengthens the next (deferDelayMs). A delivery that was `held` (its endpoint unpaused since) is `pending` again:
   * the one write. The board's log says so once.
   */
  async function defer(job: Job<DeliveryJob>, token: string | undefined, a: Attempting): Promise<never> {
    const deferrals = job.data.deferrals ?? 0
    const retryAt = Date.now() + deferDelayMs(deferrals)
    if (job.data.holds) await models.Delivery.updateOne({ _id: a.id, status: 'held' }, { $set: { status: 'pending' } })
    await job.updateData({ ...jobData(a, a.number, null, a.interrupted), deferrals: deferrals + 1 })
    deps.onDeferred?.()
    if (deferrals === 0) await boardLog(job, `waiting: the receiver is slow and its earlier attempts hold its share of the worker's slots (${settings.slowAppConcurrency})`)
    log.debug({ deliveryId: a.id, appDid: a.appDid, environment: a.environment, deferrals: deferrals + 1 }, 'delivery attempt deferred: the receiver is slow')
    if (!token) throw new Error('a deferred delivery needs the job token')
    await job.moveToDelayed(retryAt, token)
    throw new DelayedError()
  }

  /**
   * The channel's request, its body signed with the app environment's secrets on both channels; a problem on our side
   * fails the attempt unsent: secrets that cannot be read (WEBHOOK_SECRET_KEY changed), on either channel; no secret,
   * on the webhook channel (the XRPC channel then sends the token alone); a token that cannot be signed.
   */
  async function prepare(a: Attempting, channel: Channel, url: string): Promise<Prepared> {
    const target = { id: a.id, appDid: a.appDid, body: a.body }
    let secrets: string[]
    try {
      secrets = await deps.signingSecrets(a.appDid, a.environment)
    } catch (err) {
      log.error({ deliveryId: a.id, err: { message: (err as Error).message } }, 'could not read the signing secrets (WEBHOOK_SECRET_KEY changed?)')
      return { error: 'could not read the signing secrets' }
    }
    if (channel === 'webhook') {
      if (secrets.length === 0) return { error: 'no signing secret for this app environment' }
      return { request: webhookRequest(url, target, secrets) }
    }
    // a receiver configured before its environment had a secret is still sent its events, with the token alone
    try {
      return { request: await xrpcRequest(url, target, deps.service, secrets) }
    } catch (err) {
      log.error({ deliveryId: a.id, err: { message: (err as Error).message } }, 'could not sign the service-auth token')
      return { error: 'could not sign the service-auth token' }
    }
  }

  /**
   * The endpoint's health after an attempt that reached it; disabling it holds its next attempts, unless the app has
   * moved to another URL meanwhile (the apps domain compares). Never fails the job.
   */
  async function recordHealth(a: Attempting, endpoint: { channel: Channel; url: string }, delivered: boolean, statusCode: number | null): Promise<void> {
    try {
      const id = `${endpoint.channel} ${endpoint.url}`
      const reason = await deps.health.record(a.appDid, a.environment, id, { delivered, statusCode })
      if (!reason) return
      await deps.endpoints.disable(a.appDid, a.environment, reason, endpoint.url, `${a.id}.${a.number}`)
      await deps.health.reset(a.appDid, a.environment, id)
      log.warn({ appDid: a.appDid, environment: a.environment, reason, deliveryId: a.id }, 'event endpoint disabled: its deliveries are held until the app unpauses it')
    } catch (err) {
      log.error({ appDid: a.appDid, environment: a.environment, err: { message: (err as Error).message } }, 'could not record the endpoint health')
    }
  }

  /**
   * The attempt's outcome, one write on the happy path. The write counts the attempt only while the delivery has not
   * counted its number: a job whose data fell behind the delivery (Redis lost the job while its worker was still
   * sending, or a worker whose lock lapsed wrote the job's data after another took it over) would otherwise log a
   * number twice and lower `attemptCount`. Then the attempt is numbered after what the delivery counted, and the
   * interrupted attempts the job named are dropped (the delivery counted past them). A delivery that another worker
   * delivered meanwhile is left as it is: its log ends with the attempt that delivered it, and this late one is only
   * in the workers' log. `entry.number` ends as the number written. `reachedAt`: when this attempt, or one of the
   * interrupted ones, first may have reached the receiver (recorded with `$min`, as the first delivery's time is).
   */
  async function writeOutcome(a: Attempting, entry: AttemptDoc, delivered: boolean, finishedAt: Date, reachedAt: Date | null): Promise<'written' | 'already-delivered' | 'gone'> {
    const { nextAttemptAt } = entry
    const state = delivered ? { status: 'delivered', deliveredAt: finishedAt } : nextAttemptAt === null ? { status: 'failed', failedAt: finishedAt } : { status: 'pending' }
    const counted = (n: number) => ({ attemptCount: n, lastAttemptAt: entry.attemptedAt, nextAttemptAt, lastStatusCode: entry.statusCode, lastError: entry.error })
    // the first delivery's time stays: a redriven run that delivers again (the receiver answers it as a duplicate)
    // must not move the redrive window along (domain/redrive.ts)
    // likewise the first time the receiver may have processed it, delivered or not (domain/deliveries.ts, firstReached)
    const firsts = { ...(delivered ? { firstDeliveredAt: finishedAt } : {}), ...(reachedAt ? { firstReachedAt: reachedAt } : {}) }
    const firstDelivered = Object.keys(firsts).length > 0 ? { $min: firsts } : {}
    const lowest = a.interrupted[0]?.number ?? entry.number
    await makeRoomInAttemptLog(a.id, entry.number, a.interrupted.length + 1)
    const first = await models.Delivery.updateOne(
      { _id: a.id, status: { $ne: 'delivered' }, attemptCount: { $lt: lowest } },
      { ...withAttempts({ ...state, ...counted(entry.number) }, [...a.interrupted.map((i) => interruptedEntry(i, a.run)), entry]), ...firstDelivered },
    )
    if (first.matchedCount > 0) return 'written'
    for (let tries = 0; tries < 5; tries++) {
      const d = (await models.Delivery.findById(a.id, { status: 1, attemptCount: 1 }).lean()) as Pick<DeliveryDoc, 'status' | 'attemptCount'> | null
      if (!d) return 'gone' // deleted meanwhile (a test delivery past its retention): nothing to log into, nothing more to send
      if (d.status === 'delivered') return 'already-delivered'
      const counts = d.attemptCount ?? 0
      log.warn({ deliveryId: a.id, number: entry.number, counted: counts }, 'delivery attempt numbered after the ones its delivery counted (the job was behind)')
      entry.number = counts + 1
      const res = await models.Delivery.updateOne({ _id: a.id, status: { $ne: 'delivered' }, attemptCount: counts }, { ...withAttempts({ ...state, ...counted(entry.number) }, [entry]), ...firstDelivered })
      if (res.matchedCount > 0) return 'written'
    }
    throw new Error(`the outcome of an attempt of ${a.id} could not be written: its count kept changing`)
  }

  /**
   * Before the outcome is appended, the log loses its oldest entries until those appended fit in ATTEMPT_LOG_LIMIT
   * (one `$pop` each, and one more: a log that outgrew the limit before, on FerretDB, comes back to it). It is done
   * first because the outcome's write ends the worker's turn: a delivered or failed delivery may be redriven at
   * once, and on FerretDB a later `$pop` (which rewrites the document it read) could undo the redrive's write. On
   * MongoDB, where the append's `$slice` trims, the result is the same. Attempts are numbered across runs, so a log
   * can only be that full once its newest number is past the limit.
   */
  async function makeRoomInAttemptLog(id: string, number: number, appending: number): Promise<void> {
    if (number <= ATTEMPT_LOG_LIMIT) return
    try {
      for (let i = 0; i <= appending; i++) {
        const popped = await models.Delivery.updateOne({ _id: id, [`attempts.${ATTEMPT_LOG_LIMIT - appending}`]: { $exists: true } }, { $pop: { attempts: -1 } })
        if (popped.modifiedCount === 0) break
      }
    } catch (err) {
      // the attempt is still written: a trim that failed waits for the next attempt's (the log shows the newest 100 anyway)
      log.warn({ deliveryId: id, err: { message: (err as Error).message } }, 'delivery attempt log not trimmed')
    }
  }

  return async function processDelivery(job: Job<DeliveryJob>, token?: string): Promise<ProcessOutcome> {
    const a = await resume(job)
    if (a === 'gone') {
      log.warn({ deliveryId: job.data.deliveryId }, 'delivery job without a delivery: nothing sent')
      return 'gone'
    }
    if (a === 'already-delivered') return a
    // the attempts of the run so far, the ones dead workers left included (BullMQ does not count those; the contract's 14 do)
    if (Math.max(a.attemptsBefore + job.attemptsMade, a.firstOfRun === null ? 0 : a.number - a.firstOfRun) >= MAX_ATTEMPTS) return endSpentRun(a)
    if (a.sendBefore !== null && Date.now() >= a.sendBefore) return endUnsent(a, 'too-late', TOO_LATE_ERROR, 'first sent more than 30 days ago')

    const lookup = await deps.endpoints.lookup(a.appDid, a.environment, `${a.id}.${a.number}`)
    if (lookup.kind === 'found' && lookup.endpoint.paused) {
      // held for good would keep its job in Redis for ever (a paused app's events, test events sent on purpose)
      const heldSince = job.data.heldSince
      if (heldSince !== undefined && Date.now() - heldSince >= settings.holdMaxMs) return endUnsent(a, 'held-too-long', HELD_TOO_LONG_ERROR, 'held longer than DELIVERY_HOLD_MAX_MS')
      return hold(job, token, a)
    }

    // Where this attempt goes, or why it cannot go anywhere (still a failed attempt, retried on the schedule).
    let channel: Channel | null = null
    let target: string | null = null
    /** the endpoint's URL as the app configured it (its health is counted by it) */
    let configuredUrl: string | null = null
    let failure: string | null = null
    if (lookup.kind === 'unavailable') failure = lookup.error
    else if (lookup.kind === 'not-configured') failure = `${NOT_CONFIGURED_ERROR} (${lookup.reason})`
    else {
      channel = lookup.endpoint.channel
      const raw = lookup.endpoint.configured ? lookup.endpoint.url : null
      configuredUrl = raw
      if (raw === null) failure = NOT_CONFIGURED_ERROR
      else if ((target = httpUrl(raw)) === null) failure = 'the configured URL is not a valid http(s) URL'
    }

    // a slow receiver's attempts take at most their share of this process's slots; the others wait their turn
    const slot = failure === null ? share.begin(`${a.appDid} ${a.environment}`) : null
    if (failure === null && slot === null) return defer(job, token, a)

    let result: AttemptResult
    /** the attempt reached for the endpoint: its outcome counts for the endpoint's health */
    let sent = false
    // The attempt is named in the job before anything is sent: a worker that dies from here on leaves it there.
    const attemptedAt = new Date()
    const lateMs = attemptLateMs(job, attemptedAt.getTime())
    const url = target !== null && channel === 'xrpc' ? receiveEventUrl(target) : target
    try {
      const inFlight: UnrecordedAttempt = { number: a.number, attemptedAt: attemptedAt.toISOString(), channel, url: withoutQuery(url) }
      await job.updateData(jobData(a, a.number, inFlight, a.interrupted))
      if (failure === null && channel !== null && target !== null) {
        const prepared = await prepare(a, channel, target)
        sent = !('error' in prepared)
        if (sent) slot?.sending()
        result = 'error' in prepared
          ? { statusCode: null, durationMs: 0, error: prepared.error, responseExcerpt: null, retryAfter: null }
          : await sendAttempt(deps.agents[a.environment], prepared.request, settings.timeoutMs)
      } else {
        result = { statusCode: null, durationMs: 0, error: failure ?? NOT_CONFIGURED_ERROR, responseExcerpt: null, retryAfter: null }
      }
    } finally {
      slot?.end()
    }
    // the receiver may have processed it: anything but an attempt that never left (nothing to send it to, unsigned,
    // the connection never made), and the interrupted ones before it that may have been sent
    const reachedAt = firstReachedOf(a.interrupted, sent && !result.unsent ? attemptedAt : null)

    const finishedAt = new Date()
    const delivered = isDelivered(result) || isDuplicateDeliveryAnswer(result)
    // this attempt's place in the run: by BullMQ's count, or by its number when a dead worker's attempt came before it
    // (BullMQ does not count that one; the contract's 14 do)
    const attemptsInRun = Math.max(a.attemptsBefore + job.attemptsMade + 1, a.firstOfRun === null ? 0 : a.number - a.firstOfRun + 1)
    const last = attemptsInRun >= MAX_ATTEMPTS || job.attemptsMade + 1 >= (job.opts.attempts ?? MAX_ATTEMPTS)
    const delayMs = delivered || last ? null : nextDelayMs(attemptsInRun, { scale: settings.scheduleScale }, parseRetryAfter(result.retryAfter ?? undefined, finishedAt.getTime()))
    const nextAttemptAt = delayMs === null ? null : new Date(finishedAt.getTime() + delayMs)
    const entry: AttemptDoc = {
      number: a.number,
      run: a.run,
      channel,
      url,
      attemptedAt,
      durationMs: result.durationMs,
      statusCode: result.statusCode,
      outcome: delivered ? 'delivered' : 'failed',
      error: delivered ? null : result.error,
      responseExcerpt: result.responseExcerpt,
      nextAttemptAt,
    }
    const written = await writeOutcome(a, entry, delivered, finishedAt, reachedAt)
    if (written === 'gone') {
      log.warn({ deliveryId: a.id, number: entry.number, statusCode: entry.statusCode, error: entry.error }, 'delivery attempt made for a delivery deleted meanwhile: no more attempts')
      return written
    }
    if (written === 'already-delivered') {
      log.warn({ deliveryId: a.id, number: entry.number, statusCode: entry.statusCode, error: entry.error }, 'delivery attempt made after another worker delivered it: not logged in the delivery')
      return written
    }
    const number = entry.number

    const logged = { ...(a.requestId !== null ? { reqId: a.requestId } : {}), deliveryId: a.id, appDid: a.appDid, environment: a.environment, number, channel, statusCode: result.statusCode, durationMs: result.durationMs }
    if (sent && channel !== null) deps.onAttemptSent?.({ channel, environment: a.environment, delivered, durationMs: result.durationMs, lateMs })
    if (sent && channel !== null && configuredUrl !== null) await recordHealth(a, { channel, url: configuredUrl }, delivered, result.statusCode)
    if (delivered) {
      log.info({ ...logged, outcome: 'delivered' }, 'delivery attempt')
      await boardLog(job, `attempt ${number} (${channel}): delivered, HTTP ${result.statusCode} in ${result.durationMs} ms`)
      return 'delivered'
    }
    // the outcome is written: the job names the next attempt and none in flight, and, once the receiver may have
    // processed the delivery, when its attempts must stop (a run held past it while its endpoint is paused ends unsent)
    a.sendBefore = sendBeforeAfter(a.sendBefore, reachedAt)
    a.dueAt = nextAttemptAt?.getTime() ?? null
    await job.updateData(jobData(a, number + 1, null, []))
    log.info({ ...logged, outcome: 'failed', error: result.error, nextAttemptAt, final: nextAttemptAt === null }, 'delivery attempt')
    const next = nextAttemptAt === null ? 'no attempts left in this run: failed, waiting for a redrive' : `next attempt at ${nextAttemptAt.toISOString()}`
    await boardLog(job, `attempt ${number} (${channel ?? 'no channel'}): ${result.error ?? 'not delivered'} after ${result.durationMs} ms; ${next}`)
    const message = `attempt ${number} failed: ${result.error ?? 'not delivered'}`
    throw last ? new LastAttemptFailedError(message, null) : new AttemptFailedError(message, delayMs)
  }
}

/**
 * A job that failed for good outside an attempt (stalled too often, an error on its last try): the delivery is
 * `failed` unless settled, with the attempts its dead workers left in flight logged `interrupted`.
 */
export async function settleAbandonedJob(models: EventsModels, job: Job<DeliveryJob>, error: string): Promise<void> {
  const d = (await models.Delivery.findById(job.data.deliveryId, { attempts: 0 }).lean()) as DeliveryDoc | null
  if (!d || d.status === 'delivered' || d.status === 'failed') return
  const unlogged = unrecorded(job.data, d.attemptCount ?? 0)
  const dead = unlogged.map((a) => interruptedEntry(a, d.run ?? 1))
  const counted = dead.length > 0 ? { attemptCount: dead.at(-1)!.number } : {}
  // only as read: a worker whose lock lapsed may have settled it meanwhile (delivered), which this must not undo
  await models.Delivery.updateOne(
    { _id: d._id, status: d.status, attemptCount: d.attemptCount ?? 0 },
    { ...withAttempts({ status: 'failed', failedAt: new Date(), nextAttemptAt: null, lastError: error, ...counted }, dead), ...reachedUpdate(firstReachedOf(unlogged)) },
  )
}
