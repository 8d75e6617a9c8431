/**
 * Collections owned by the events domain (docs/events.md). Every document carries its app DID and environment;
 * every read filters on both.
 *
 * FerretDB 1.x has no transactions and its filtered updates are not atomic, so what must hold under concurrency
 * rests on unique indexes and on atomic Redis/BullMQ operations:
 *
 *   deliveries             `_id` = delivery id; derived from the domain event id   one delivery per event
 *   signing_secrets        unique (appDid, environment, generation)               one secret per generation
 *   signing_secret_turns   `_id` = `<environment> <app DID>#<n>` (inTurn)          one rotation at a time
 *
 * A delivery carries its attempt log (`attempts`): its worker, the only writer while it holds the job, appends each
 * attempt with its outcome in the same write as the delivery's state.
 */
import { Schema, type Connection, type InferSchemaType, type Model } from 'mongoose'
import { connectDomain, createTurnModel, type TurnModel } from '@svc/subgraph-server'
import { DELIVERY_STATUSES, ENVIRONMENTS, type DeliveryStatus } from '@svc/vocabulary'


/** The delivery log's status values (docs/events.md, "Delivery states"). */
export { DELIVERY_STATUSES, type DeliveryStatus }

/** Where a delivery came from: a domain's outbox, or the test-event utility. */
export const DELIVERY_SOURCES = ['apps', 'payments', 'tickets', 'test'] as const
export type DeliverySource = (typeof DELIVERY_SOURCES)[number]

export const CHANNELS = ['webhook', 'xrpc'] as const
export type Channel = (typeof CHANNELS)[number]

/** How an attempt ended; `interrupted`: its worker died before it learned the answer (the next pick-up records it). */
export const ATTEMPT_OUTCOMES = ['delivered', 'failed', 'interrupted'] as const
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number]

/** One entry of a delivery's attempt log (docs/events.md, "Attempt log"). */
const attemptSchema = new Schema(
  {
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
  { _id: false },
)

/** The attempt log a delivery keeps (the oldest entries beyond it are dropped on MongoDB; FerretDB 1.x keeps them). */
export const ATTEMPT_LOG_LIMIT = 100

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
    /** the request that caused its event (the `reqId` of its logs in every process), logged with each attempt */
    requestId: { type: String, default: null },
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
    /** when it was first delivered, never moved by a later run (for deliveries from before firstReachedAt, a redrive's window is measured from it); no default: `$min` sets it */
    firstDeliveredAt: { type: Date },
    /**
     * when an attempt first may have reached a receiver (answered, timed out, interrupted; not one refused before
     * sending), delivered or not: receivers keep processed ids 30 days from about then, so the redrive window and a
     * run's sendBefore count from it (domain/deliveries.ts, firstReached). No default: `$min` sets it; absent from
     * deliveries attempted before it was recorded
     */
    firstReachedAt: { type: Date },
    failedAt: { type: Date, default: null },
    /** the attempt log, oldest first */
    attempts: { type: [attemptSchema], default: [] },
    /** its number in the app environment's delivery log, and the key of that number's page (domain/delivery-log-pages.ts) */
    logSeq: { type: Number, default: null },
    logPage: { type: String, default: null },
  },
  { timestamps: true, collection: 'deliveries', versionKey: false },
)
// the delivery log: a page by its key; the newest first when the pages cannot tell (domain/delivery-log-pages.ts)
deliverySchema.index({ logPage: 1 })
deliverySchema.index({ appDid: 1, environment: 1, logSeq: -1, createdAt: -1, _id: -1 })
deliverySchema.index({ appDid: 1, environment: 1, status: 1, createdAt: -1 })
// the reconciler's scan of the open ones (domain/reconcile.ts): on MongoDB without it, every delivery ever made, each minute
deliverySchema.index({ status: 1 })
// the hourly prune of the test environment's deliveries past the retention (domain/retention.ts)
deliverySchema.index({ environment: 1, createdAt: 1 })


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
// the newest secret of any app, which tells whether WEBHOOK_SECRET_KEY reads what is stored (domain/signing-secrets.ts)
signingSecretSchema.index({ createdAt: -1 })

export type DeliveryDoc = Omit<InferSchemaType<typeof deliverySchema>, 'attempts'> & { _id: string; createdAt: Date; updatedAt: Date; attempts?: AttemptDoc[] }
export type AttemptDoc = InferSchemaType<typeof attemptSchema>
export type SigningSecretDoc = InferSchemaType<typeof signingSecretSchema>

export interface EventsModels {
  Delivery: Model<DeliveryDoc>
  SigningSecret: Model<SigningSecretDoc>
  /** one rotation of an app environment's signing secrets at a time (domain/signing-secrets.ts) */
  SigningSecretTurn: TurnModel
}

export async function createEventsModels(conn: Connection): Promise<EventsModels> {
  const models: EventsModels = {
    Delivery: conn.model<DeliveryDoc>('Delivery', deliverySchema),
    SigningSecret: conn.model<SigningSecretDoc>('SigningSecret', signingSecretSchema),
    SigningSecretTurn: await createTurnModel(conn, 'SigningSecretTurn', 'signing_secret_turns'),
  }
  await Promise.all([models.Delivery.init(), models.SigningSecret.init()])
  return models
}

/** The events domain's own connection and models: the subgraph, the workers and one-off programs use it. */
export const connectEvents = (mongoUrl: string, opts: Parameters<typeof connectDomain>[2] = {}) => connectDomain(mongoUrl, createEventsModels, opts)

export { findEach, isDuplicateKeyError } from '@svc/subgraph-server'
