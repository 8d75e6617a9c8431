/**
 * Collections owned by the events domain (docs/events.md). Every document carries its app DID and environment;
 * every read filters on both.
 *
 * FerretDB 1.x has no transactions and its filtered updates are not atomic, so what must hold under concurrency
 * rests on unique indexes and on atomic Redis/BullMQ operations:
 *
 *   deliveries         `_id` = delivery id; derived from the domain event id   one delivery per event
 *   delivery_attempts  `_id` = <deliveryId>.<number>, unique (deliveryId, number)   one log entry per attempt number
 *   signing_secrets    unique (appDid, environment, generation)               one secret per generation
 */
import { Schema, type Connection, type InferSchemaType, type Model } from 'mongoose'
import { connectDomain } from '@svc/subgraph-server'
import { ENVIRONMENTS } from '@svc/vocabulary'


/** The delivery log's status values (docs/events.md, "Delivery states"). */
export const DELIVERY_STATUSES = ['pending', 'held', 'delivered', 'failed'] as const
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number]

/** Where a delivery came from: a domain's outbox, or the test-event utility. */
export const DELIVERY_SOURCES = ['apps', 'payments', 'test'] as const
export type DeliverySource = (typeof DELIVERY_SOURCES)[number]

export const CHANNELS = ['webhook', 'xrpc'] as const
export type Channel = (typeof CHANNELS)[number]

/** How an attempt ended; `sending` while it runs (a worker that died leaves it, the next pick-up marks it interrupted). */
export const ATTEMPT_OUTCOMES = ['sending', 'delivered', 'failed', 'interrupted'] as const
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number]

const deliverySchema = new Schema(
  {
    /** `whd_` + 32 hex: the envelope id, Svc-Delivery-Id, webhook-id and the BullMQ job id */
    _id: { type: String, required: true },
    appDid: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    /** the domain event (`evt_…`) this delivers; null for test events */
    eventId: { type: String, default: null },
    eventType: { type: String, required: true },
    source: { type: String, required: true, enum: DELIVERY_SOURCES },
    /** the envelope, serialized once: every attempt sends exactly these bytes */
    body: { type: String, required: true },
    status: { type: String, required: true, enum: DELIVERY_STATUSES },
    /** attempts made so far, across runs (the log's attemptCount) */
    attemptCount: { type: Number, required: true, default: 0 },
    /** 1 for the first run of the schedule; each redrive starts the next */
    run: { type: Number, required: true, default: 1 },
    lastAttemptAt: { type: Date, default: null },
    nextAttemptAt: { type: Date, default: null },
    lastStatusCode: { type: Number, default: null },
    lastError: { type: String, default: null },
    deliveredAt: { type: Date, default: null },
    failedAt: { type: Date, default: null },
  },
  { timestamps: true, collection: 'deliveries', versionKey: false },
)
deliverySchema.index({ appDid: 1, environment: 1, createdAt: -1 })
deliverySchema.index({ appDid: 1, environment: 1, status: 1, createdAt: -1 })

/**
 * An attempt's `_id`: `<deliveryId>.<number>`. The processor finds a dead worker's attempt by id alone: on FerretDB
 * only `_id` filters avoid a scan of the whole log, and such a scan inside a write serializes every delivery.
 */
export function attemptId(deliveryId: string, number: number): string {
  return `${deliveryId}.${number}`
}

const attemptSchema = new Schema(
  {
    _id: {
      type: String,
      default(this: { deliveryId: string; number: number }) {
        return attemptId(this.deliveryId, this.number)
      },
    },
    deliveryId: { type: String, required: true },
    appDid: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    /** 1, 2, … across the delivery's runs */
    number: { type: Number, required: true },
    run: { type: Number, required: true },
    /** null when no channel was configured */
    channel: { type: String, default: null },
    /** where it was sent (no credentials: webhook URLs carry none) */
    url: { type: String, default: null },
    attemptedAt: { type: Date, required: true },
    durationMs: { type: Number, default: null },
    statusCode: { type: Number, default: null },
    outcome: { type: String, required: true, enum: ATTEMPT_OUTCOMES },
    error: { type: String, default: null },
    /** the first 500 characters of the answer's body */
    responseExcerpt: { type: String, default: null },
    nextAttemptAt: { type: Date, default: null },
  },
  { collection: 'delivery_attempts', versionKey: false },
)
attemptSchema.index({ deliveryId: 1, number: 1 }, { unique: true })

const signingSecretSchema = new Schema(
  {
    appDid: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    /** 1 for the secret created with the configuration; each rotation adds one */
    generation: { type: Number, required: true },
    /** AES-256-GCM of the `whsec_…` string: base64 iv, ciphertext and tag */
    iv: { type: String, required: true },
    ciphertext: { type: String, required: true },
    tag: { type: String, required: true },
    /** the last four characters, what operators are shown */
    hint: { type: String, required: true },
    /** null while it is the current secret; set by a rotation to the end of the overlap */
    expiresAt: { type: Date, default: null },
  },
  { timestamps: true, collection: 'signing_secrets', versionKey: false },
)
signingSecretSchema.index({ appDid: 1, environment: 1, generation: 1 }, { unique: true })

export type DeliveryDoc = InferSchemaType<typeof deliverySchema> & { _id: string; createdAt: Date; updatedAt: Date }
export type AttemptDoc = InferSchemaType<typeof attemptSchema> & { _id: string }
export type SigningSecretDoc = InferSchemaType<typeof signingSecretSchema>

export interface EventsModels {
  Delivery: Model<DeliveryDoc>
  Attempt: Model<AttemptDoc>
  SigningSecret: Model<SigningSecretDoc>
}

export async function createEventsModels(conn: Connection): Promise<EventsModels> {
  const models: EventsModels = {
    Delivery: conn.model<DeliveryDoc>('Delivery', deliverySchema),
    Attempt: conn.model<AttemptDoc>('DeliveryAttempt', attemptSchema),
    SigningSecret: conn.model<SigningSecretDoc>('SigningSecret', signingSecretSchema),
  }
  await Promise.all([models.Delivery.init(), models.Attempt.init(), models.SigningSecret.init()])
  return models
}

/** The events domain's own connection and models: the subgraph, the workers and one-off programs use it. */
export const connectEvents = (mongoUrl: string) => connectDomain(mongoUrl, createEventsModels)

export { isDuplicateKeyError } from '@svc/subgraph-server'
