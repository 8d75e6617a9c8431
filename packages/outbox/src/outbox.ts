/**
 * The domain-event outbox (DESIGN.md §2). A domain writes an event here with the state change that caused it;
 * the domain's relay publishes unrelayed events to BullMQ and the events domain delivers them. Each domain has its
 * own outbox collection (`<domain>_outbox`, outboxCollection).
 *
 * Without multi-document transactions (FerretDB), "together" means: the event's id is derived from the fact it
 * reports (`key`, e.g. `payment.completed:<checkout id>`), so the write is idempotent, and every domain writes
 * the event as a step its recovery repeats until the state change is final. A crash between the two writes
 * therefore never loses the event, and a repeat never duplicates it (unique `_id`).
 */
import { createHash } from 'node:crypto'
import { Schema, type Connection, type Model } from 'mongoose'
import { ENVIRONMENTS, type Environment, type EventType } from '@svc/vocabulary'
import type { EventSource } from './queue'
import { OUTBOX_WRITTEN, outboxNamespace, outboxWrites } from './writes'


export interface OutboxEvent {
  /** `evt_` + 32 hex characters derived from `key` */
  _id: string
  /** event type, e.g. `payment.completed`, `app.authorization.granted` */
  type: EventType
  environment: Environment
  /** the app the event is for (its webhook and receiver) */
  appDid: string
  /** the event payload (`data` of the delivered envelope) */
  data: Record<string, unknown>
  /** the fact this event reports, unique per event; the id is derived from it */
  key: string
  occurredAt: Date
  /**
   * false until the relay has put the event on the queue. The relay finds and marks events by it: FerretDB pushes an
   * equality on a boolean down to its index, and not `relayedAt: null`.
   */
  relayed: boolean
  /** set by the relay with `relayed` */
  relayedAt: Date | null
  /** the request that caused the state change (its logs' `reqId`), carried to the delivery; null from a sweep */
  requestId?: string | null
}

const outboxSchema = new Schema<OutboxEvent>(
  {
    _id: { type: String, required: true },
    type: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    appDid: { type: String, required: true },
    data: { type: Schema.Types.Mixed, required: true },
    key: { type: String, required: true },
    occurredAt: { type: Date, required: true },
    relayed: { type: Boolean, required: true, default: false },
    relayedAt: { type: Date, default: null },
    requestId: { type: String, default: null },
  },
  { versionKey: false, minimize: false },
)
outboxSchema.index({ relayed: 1, occurredAt: 1 })

export type OutboxModel = Model<OutboxEvent>

/** The outbox collection of a domain: its own, so each domain's relay sees only that domain's events. */
export function outboxCollection(source: EventSource): string {
  return `${source}_outbox`
}

export async function createOutboxModel(conn: Connection, source: EventSource): Promise<OutboxModel> {
  const model = conn.model<OutboxEvent>('OutboxEvent', outboxSchema, outboxCollection(source))
  await model.init()
  return model
}

/** The event id of a fact: stable, so writing the same fact twice is one event. */
export function outboxEventId(key: string): string {
  return `evt_${createHash('sha256').update(key).digest('hex').slice(0, 32)}`
}

export interface NewOutboxEvent {
  type: EventType
  environment: Environment
  appDid: string
  data: Record<string, unknown>
  key: string
  occurredAt?: Date
  /** the request being served (its `reqId`), if any: the events workers log the delivery's steps with it */
  requestId?: string | null
}

/**
 * Writes the event of a fact once; a repeat (also a concurrent one) is a no-op. Returns the event id.
 * A new event wakes the outbox relays of this process (outboxWrites), so it reaches the queue in milliseconds.
 */
export async function writeOutboxEvent(model: OutboxModel, event: NewOutboxEvent): Promise<string> {
  const _id = outboxEventId(event.key)
  const written: OutboxEvent = { _id, ...event, occurredAt: event.occurredAt ?? new Date(), relayed: false, relayedAt: null }
  try {
    await model.create(written)
  } catch (err) {
    if ((err as { code?: number }).code !== 11000) throw err
    return _id
  }
  // the relay publishes the event as written, without reading it back
  outboxWrites.emit(OUTBOX_WRITTEN, outboxNamespace(model), _id, written)
  return _id
}

/**
 * Writes the events of many facts in one unordered command (as writeOutboxEvent each: a fact already written is a
 * no-op) and wakes the relays for those inserted. Returns the event ids, in order.
 */
export async function writeOutboxEvents(model: OutboxModel, events: NewOutboxEvent[]): Promise<string[]> {
  if (events.length === 0) return []
  const docs: OutboxEvent[] = events.map((event) => ({ _id: outboxEventId(event.key), ...event, occurredAt: event.occurredAt ?? new Date(), relayed: false, relayedAt: null }))
  let repeated = new Set<number>()
  try {
    await model.collection.insertMany(docs as never[], { ordered: false })
  } catch (err) {
    const writeErrors = (err as { writeErrors?: unknown }).writeErrors
    const errors = (Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : []) as { index: number; code?: number }[]
    if (errors.length === 0 || errors.some((e) => e.code !== 11000)) throw err
    repeated = new Set(errors.map((e) => e.index))
  }
  const namespace = outboxNamespace(model)
  docs.forEach((doc, i) => {
    if (!repeated.has(i)) outboxWrites.emit(OUTBOX_WRITTEN, namespace, doc._id, doc)
  })
  return docs.map((doc) => doc._id)
}
