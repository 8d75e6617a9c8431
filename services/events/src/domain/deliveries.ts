/**
 * Creating and queueing deliveries: one document per delivery id (`_id`, so a repeat is a no-op) and one BullMQ job
 * per delivery (job id = delivery id, so a repeat while the job exists is a no-op). The job carries what its attempts
 * send (deliveryJob), so the worker does not read the delivery back.
 */
import type { JobsOptions, Queue } from 'bullmq'
import { findEach, isDuplicateKeyError, type DeliveryDoc, type DeliverySource, type EventsModels } from '../models'
import { DELIVERY_BACKOFF, type DeliveryJob } from '../queues'
import { API_VERSION, serializeEnvelope } from './envelope'
import { MAX_ATTEMPTS } from './schedule'
import { numberForLog, type DeliveryLogStore } from './delivery-log-pages'
import type { Environment } from '@svc/vocabulary'

/**
 * Every delivery job: the schedule's attempts and backoff; finished jobs, delivered or failed, stay a week so a repeat
 * add stays a no-op and operators see them on the board (a redrive of one gone adds a new job; the delivery log is
 * the record). A job keeps its last 3 stack traces and 50 log lines: a redriven job would otherwise add 14 of each
 * per run.
 */
export const DELIVERY_JOB_OPTIONS: JobsOptions = {
  attempts: MAX_ATTEMPTS,
  backoff: { type: DELIVERY_BACKOFF },
  removeOnComplete: { age: 7 * 24 * 3600, count: 100_000 },
  removeOnFail: { age: 7 * 24 * 3600, count: 100_000 },
  stackTraceLimit: 3,
  keepLogs: 50,
}

export interface NewDelivery {
  id: string
  appDid: string
  environment: Environment
  eventId: string | null
  eventType: string
  source: DeliverySource
  /** the envelope's createdAt: when the fact happened */
  createdAt: Date
  data: Record<string, unknown>
  /** the request that caused the event, when the event says */
  requestId?: string | null
}

/** Writes the delivery unless it exists; returns the stored document either way (the new one without reading it back). */
export async function createDelivery(store: DeliveryLogStore, input: NewDelivery): Promise<DeliveryDoc> {
  const { models } = store
  const body = serializeEnvelope({
    id: input.id,
    type: input.eventType,
    createdAt: input.createdAt.toISOString(),
    apiVersion: API_VERSION,
    environment: input.environment,
    data: input.data,
  })
  // what Delivery.create would store: the schema's defaults and its timestamps
  const now = new Date()
  const doc = new models.Delivery({
    _id: input.id,
    appDid: input.appDid,
    environment: input.environment,
    eventId: input.eventId,
    eventType: input.eventType,
    source: input.source,
    body,
    requestId: input.requestId ?? null,
    status: 'pending',
    attemptCount: 0,
    run: 1,
    attempts: [],
    createdAt: now,
    updatedAt: now,
  })
  await doc.validate()
  const created = doc.toObject() as DeliveryDoc
  if (await insertTogether(store, created)) return created
  // it existed (a repeated event): the stored one, whatever its state
  const stored = await models.Delivery.findById(input.id).lean()
  if (!stored) throw new Error(`delivery ${input.id} vanished after its insert`)
  return stored as DeliveryDoc
}

/**
 * Group commit: the deliveries created at the same moment (the worker runs DELIVERY_CONCURRENCY events at once) go to
 * the database as one unordered insertMany instead of one insert each, which FerretDB serves at a quarter of the
 * cost per document, numbered for the delivery log together (one Redis call per app environment). Each caller learns
 * about its own document: true when inserted, false when it existed (a repeated event); any other error reaches the
 * callers whose documents it concerns.
 */
/** A caller's delivery waiting for the batch insert, and how to answer it (inserted: true; it existed: false). */
interface Waiting {
  doc: DeliveryDoc
  settle: (inserted: boolean) => void
  fail: (err: unknown) => void
}

const waiting = new WeakMap<EventsModels, Waiting[]>()

function insertTogether(store: DeliveryLogStore, doc: DeliveryDoc): Promise<boolean> {
  return new Promise((settle, fail) => {
    let batch = waiting.get(store.models)
    if (!batch) {
      waiting.set(store.models, (batch = []))
      setImmediate(() => void flush(store))
    }
    batch.push({ doc, settle, fail })
  })
}

async function flush(store: DeliveryLogStore): Promise<void> {
  const { models } = store
  const batch = waiting.get(models) ?? []
  waiting.delete(models)
  try {
    await numberForLog(store, batch.map((b) => b.doc))
  } catch (err) {
    for (const b of batch) b.fail(err)
    return
  }
  try {
    // the raw driver: the documents are complete already (defaults, validation and timestamps applied above)
    await models.Delivery.collection.insertMany(batch.map((b) => b.doc) as never[], { ordered: false })
    for (const b of batch) b.settle(true)
  } catch (err) {
    const writeErrors = (err as { writeErrors?: { index: number; code?: number }[] }).writeErrors
    const insertedCount = (err as { result?: { insertedCount?: unknown } }).result?.insertedCount
    if (!Array.isArray(writeErrors) || insertedCount !== batch.length - writeErrors.length) {
      // the answer does not account for every document: FerretDB answers its backend's failure (PostgreSQL out of
      // clients, restarting) as a bulk error naming no document, with nothing inserted. What is stored decides.
      await settleByReading(models, batch, err)
      return
    }
    const failed = new Map(writeErrors.map((e) => [e.index, e]))
    batch.forEach((b, i) => {
      const e = failed.get(i)
      if (!e) b.settle(true)
      else if (isDuplicateKeyError(e)) b.settle(false)
      else b.fail(err)
    })
  }
}

/** After an insert whose answer named no outcome per document: a stored one is answered as existing, the others fail. */
async function settleByReading(models: EventsModels, batch: Waiting[], err: unknown): Promise<void> {
  let stored: Set<string>
  try {
    stored = new Set((await findEach(batch.map((b) => b.doc._id), (id) => models.Delivery.findById(id, { _id: 1 }).lean())).map((d) => String(d._id)))
  } catch {
    for (const b of batch) b.fail(err)
    return
  }
  for (const b of batch) {
    if (stored.has(b.doc._id)) b.settle(false)
    else b.fail(err)
  }
}

/** The job of the delivery's current run, from its stored document (`attemptsBefore`: attempts of the run already made). */
/** How long receivers keep the ids of the deliveries they processed (the SDK's claim stores, by default). */
export const RECEIVERS_KEEP_IDS_MS = 30 * 24 * 3600 * 1000

/**
 * When receivers may first have processed the delivery: its first attempt that may have reached one (firstReachedAt:
 * any answer, a deadline passed, a worker that stopped mid-attempt; not one refused before a byte was sent), or, for
 * a delivery from before that was recorded, its first delivery. The earliest of those known; null when none.
 */
export function firstReached(d: Pick<DeliveryDoc, 'firstReachedAt' | 'firstDeliveredAt' | 'deliveredAt'>): Date | null {
  const delivered = d.firstDeliveredAt ?? d.deliveredAt
  const times = [d.firstReachedAt, delivered].filter((t): t is Date => t !== null && t !== undefined).map((t) => new Date(t).getTime())
  return times.length > 0 ? new Date(Math.min(...times)) : null
}

/**
 * When the attempts of a delivery that may have reached a receiver must stop: once receivers may have forgotten its
 * id, a run (a redrive's, or one held while its endpoint was paused) that sent it would have it processed twice.
 * Null for one that never reached a receiver.
 */
export function sendBefore(d: Pick<DeliveryDoc, 'firstReachedAt' | 'firstDeliveredAt' | 'deliveredAt'>): number | null {
  const first = firstReached(d)
  return first ? first.getTime() + RECEIVERS_KEEP_IDS_MS : null
}

export function deliveryJob(d: Pick<DeliveryDoc, '_id' | 'appDid' | 'environment' | 'body' | 'run' | 'attemptCount' | 'firstReachedAt' | 'firstDeliveredAt' | 'deliveredAt' | 'requestId'>, attemptsBefore = 0): DeliveryJob {
  const until = sendBefore(d)
  const next = (d.attemptCount ?? 0) + 1
  return {
    deliveryId: d._id,
    appDid: d.appDid,
    environment: d.environment as Environment,
    body: d.body,
    run: d.run ?? 1,
    next,
    inFlight: null,
    interrupted: [],
    ...(attemptsBefore > 0 ? { attemptsBefore } : {}),
    firstOfRun: next - attemptsBefore,
    sendBefore: until,
    ...(d.requestId ? { requestId: d.requestId } : {}),
  }
}

/** Adds the delivery's job; a job with that id already on the queue (waiting, delayed, active or finished) makes this a no-op. */
export async function enqueueDelivery(queue: Queue<DeliveryJob>, d: DeliveryDoc): Promise<void> {
  await queue.add('deliver', deliveryJob(d), { ...DELIVERY_JOB_OPTIONS, jobId: d._id })
}

/**
 * The attempts an ended job names that its delivery may not have logged: one in flight when its worker could not
 * write the outcome, and those of workers that died before it.
 */
export type UnloggedAttempts = Pick<DeliveryJob, 'inFlight' | 'interrupted'>

/**
 * Adds the job of an open delivery whose job is gone (Redis lost it, or it ended without its outcome written) for the
 * rest of its run: the attempts left of the schedule, the first at the delivery's nextAttemptAt. Reads the delivery
 * (its log tells the attempts the run made); false when it is gone or settled. A no-op on the queue when the job
 * exists. `unlogged`, from the ended job, goes into the new one: its worker logs them `interrupted` and numbers its
 * attempt after them (a run whose last attempt was one of them ends without sending it again).
 */
export async function requeueLostDelivery(models: EventsModels, queue: Queue<DeliveryJob>, deliveryId: string, now: Date, unlogged?: UnloggedAttempts): Promise<boolean> {
  const d = (await models.Delivery.findById(deliveryId).lean()) as DeliveryDoc | null
  if (!d || (d.status !== 'pending' && d.status !== 'held')) return false
  await queueRestOfRun(queue, d, now, unlogged)
  return true
}

/**
 * Adds an open delivery's job for the rest of its run (a new delivery: the whole schedule, at once); a no-op on the
 * queue when the job exists.
 */
export async function queueRestOfRun(queue: Queue<DeliveryJob>, d: DeliveryDoc, now: Date, unlogged?: UnloggedAttempts): Promise<void> {
  const run = d.run ?? 1
  // all of them when the run's last was interrupted (held, then logged): its pick-up ends the run without sending
  const made = Math.min((d.attempts ?? []).filter((a) => a.run === run).length, MAX_ATTEMPTS)
  const delay = Math.max(0, (d.nextAttemptAt?.getTime() ?? now.getTime()) - now.getTime())
  // named as in flight, the pick-up reads the delivery and logs those it has not (the worker's resume)
  const named = [...(unlogged?.interrupted ?? []), ...(unlogged?.inFlight ? [unlogged.inFlight] : [])].sort((x, y) => x.number - y.number)
  const data = { ...deliveryJob(d, made), ...(named.length > 0 ? { inFlight: named.at(-1)!, interrupted: named.slice(0, -1) } : {}) }
  await queue.add('deliver', data, { ...DELIVERY_JOB_OPTIONS, attempts: Math.max(1, MAX_ATTEMPTS - made), delay, jobId: d._id })
}
