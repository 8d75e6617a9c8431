/**
 * Collections owned by the payments subgraph (DESIGN.md §2). Every document carries `environment` and the app it
 * belongs to; every read filters on them.
 *
 * FerretDB 1.x has no transactions and its filtered updates are not atomic (it reads, then writes), so every
 * decision that must hold under concurrency is the insert of a document under a unique index:
 *
 *   checkouts        one per (appDid, environment, appOrderId)   initiate idempotency
 *                    unique statusTokenHash / browserTokenHash   token lookups (hashes only; tokens are never stored)
 *   settlements      one per checkout (`_id` = checkout id)       the single terminal decision: pay, cancel or expiry
 *   payment_records  one per uri, one per checkout                the payment record of a completed checkout
 *   proof_slots      one per payment uri (`_id`)                  the creator-proof slot: registered or declined
 *   app_links        one per (appDid, environment, recordUri)     catalog fulfillment links (last write wins)
 *   outbox           one per event id (@svc/outbox)               payment.completed events
 *   test_processor_charges  one per idempotency key (`_id`)      the test processor's own ledger (processors/test-processor.ts)
 */
import { Schema, type Connection, type InferSchemaType, type Model } from 'mongoose'
import { ENVIRONMENTS } from '@svc/vocabulary'
import { createOutboxModel, type OutboxModel } from '@svc/outbox'
import { connectDomain } from '@svc/subgraph-server'


/** pending → processing → completed | failed */
export const CHECKOUT_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const
export type CheckoutStatus = (typeof CHECKOUT_STATUSES)[number]

/** Why a checkout failed. */
export const FAILURE_REASONS = ['declined', 'expired', 'canceled', 'processor_error', 'too_many_attempts', 'not_authorized'] as const
export type FailureReason = (typeof FAILURE_REASONS)[number]

/** Who won a checkout's settlement claim. */
export const SETTLEMENT_CLAIMS = ['payment', 'cancel', 'expiry', 'lock', 'refusal'] as const
export type SettlementClaim = (typeof SETTLEMENT_CLAIMS)[number]

const refSchema = new Schema({ uri: { type: String, required: true }, cid: { type: String, required: true } }, { _id: false })

const checkoutSchema = new Schema(
  {
    /** `chk_` + 24 hex characters */
    _id: { type: String, required: true },
    appDid: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    appOrderId: { type: String, required: true },
    /** sha256 (hex) of the canonical product string, its environment resolved */
    productHash: { type: String, required: true },
    /** 32 random bytes (base64url): the tokens are HMAC(tokenSecret, `<kind>:<checkoutId>:<nonce>`) */
    nonce: { type: String, required: true },
    statusTokenHash: { type: String, required: true },
    browserTokenHash: { type: String, required: true },
    status: { type: String, required: true, enum: CHECKOUT_STATUSES, default: 'pending' },
    failureReason: { type: String, enum: FAILURE_REASONS, default: null },
    failureMessage: { type: String, default: null },
    ref: { type: refSchema, default: null },
    // the product
    recipientDid: { type: String, required: true },
    paymentType: { type: String, required: true },
    description: { type: String, required: true },
    currency: { type: String, required: true },
    amount: { type: Number, required: true },
    // null: the checkout's own page (a ticket checkout without the hold's URLs); never stored, it holds the browser token
    returnUrl: { type: String, default: null },
    cancelUrl: { type: String, default: null },
    cadence: { type: String, default: null },
    holdId: { type: String, default: null },
    /** a ticket checkout's number of tickets: its flat fee counts once per ticket (null on a tip or shop checkout) */
    tickets: { type: Number, default: null },
    // snapshots taken at initiation
    selfSale: { type: Boolean, required: true },
    recipientName: { type: String, default: null },
    approvalId: { type: String, default: null },
    /** the approval's revision when the checkout started: the grant it was started under (null before it was kept) */
    approvalRevision: { type: Number, default: null },
    feeShareBps: { type: Number, required: true },
    serviceFeeRate: {
      bps: { type: Number, required: true },
      flatAmount: { type: Number, required: true },
      flatCurrency: { type: String, required: true },
      passToBuyer: { type: Boolean, required: true },
    },
    serviceFee: { type: Number, required: true },
    buyerFee: { type: Number, required: true },
    appFee: { type: Number, required: true },
    total: { type: Number, required: true },
    recipientNet: { type: Number, required: true },
    expiresAt: { type: Date, required: true },
    completedAt: { type: Date, default: null },
    failedAt: { type: Date, default: null },
  },
  { timestamps: true, collection: 'checkouts' },
)
checkoutSchema.index({ appDid: 1, environment: 1, appOrderId: 1 }, { unique: true })
checkoutSchema.index({ statusTokenHash: 1 }, { unique: true })
checkoutSchema.index({ browserTokenHash: 1 }, { unique: true })
checkoutSchema.index({ status: 1, expiresAt: 1 })

const outcomeSchema = new Schema(
  {
    ok: { type: Boolean, required: true },
    /** success: the processor's charge id */
    chargeId: { type: String, default: null },
    /** failure: why */
    reason: { type: String, enum: FAILURE_REASONS, default: null },
    /** failure: the processor's code, e.g. card_declined */
    code: { type: String, default: null },
    /** failure: text for the buyer */
    message: { type: String, default: null },
  },
  { _id: false },
)

const settlementSchema = new Schema(
  {
    /** the checkout id: the unique `_id` is the claim */
    _id: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    appDid: { type: String, required: true },
    by: { type: String, required: true, enum: SETTLEMENT_CLAIMS },
    claimedAt: { type: Date, required: true },
    processor: { type: String, default: null },
    /** payment claims: the record key (TID), chosen once so every repeat of finishSettlement builds the same record */
    recordTid: { type: String, default: null },
    /** null until the outcome is known (a payment claim while the processor is called) */
    outcome: { type: outcomeSchema, default: null },
    settledAt: { type: Date, default: null },
    /**
     * true while the claim has no outcome (a payment waiting for its processor's answer), set with the outcome; a
     * close (cancel, lock, refusal) is true from its claim until its checkout is closed: the
     * sweep finds these by this equality, which FerretDB hands to PostgreSQL (a filter on `outcome: null` or on a
     * range of `claimedAt` reads every settlement ever made; sweep-checkouts.ts)
     */
    awaiting: { type: Boolean, default: false },
  },
  { collection: 'settlements' },
)
settlementSchema.index({ awaiting: 1 })

const proofStateSchema = new Schema(
  {
    status: { type: String, required: true, enum: ['registered', 'declined'] },
    proofUri: { type: String, default: null },
    proofCid: { type: String, default: null },
    at: { type: Date, required: true },
  },
  { _id: false },
)

const paymentRecordSchema = new Schema(
  {
    /** `at://<serviceDid>/money.svc.payment.record/<tid>` */
    uri: { type: String, required: true },
    cid: { type: String, required: true },
    tid: { type: String, required: true },
    checkoutId: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    appDid: { type: String, required: true },
    recipientDid: { type: String, required: true },
    /**
     * The record exactly as encoded (JSON text: its `$type` key cannot be a stored document key on FerretDB, and its
     * values are strings and integers only, so JSON and DAG-CBOR carry the same data).
     */
    recordJson: { type: String, required: true },
    /** a copy of the proof slot's state (proof_slots holds the decision); null while the slot is pending */
    proof: { type: proofStateSchema, default: null },
  },
  { timestamps: true, collection: 'payment_records' },
)
paymentRecordSchema.index({ uri: 1 }, { unique: true })
paymentRecordSchema.index({ checkoutId: 1 }, { unique: true })

const proofSlotSchema = new Schema(
  {
    /** the payment uri: the unique `_id` is the claim, so the first register or decline decides */
    _id: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    appDid: { type: String, required: true },
    status: { type: String, required: true, enum: ['registered', 'declined'] },
    recipientDid: { type: String, default: null },
    proofUri: { type: String, default: null },
    proofCid: { type: String, default: null },
    reason: { type: String, default: null },
    at: { type: Date, required: true },
  },
  { collection: 'proof_slots' },
)

const appLinkSchema = new Schema(
  {
    /** `alk_` + 24 hex characters */
    linkId: { type: String, required: true },
    appDid: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    recordUri: { type: String, required: true },
    fulfillmentUrl: { type: String, required: true },
    label: { type: String, default: null },
  },
  { timestamps: true, collection: 'app_links' },
)
appLinkSchema.index({ appDid: 1, environment: 1, recordUri: 1 }, { unique: true })

/**
 * The built-in test processor's ledger, standing in for a real processor's own records: what it answered under each
 * idempotency key, or that the key was closed before any charge (`result` null), so it can say after a lost answer
 * whether a charge happened.
 */
const testChargeSchema = new Schema(
  {
    /** the idempotency key */
    _id: { type: String, required: true },
    result: {
      type: new Schema({ ok: { type: Boolean, required: true }, chargeId: String, code: String, message: String }, { _id: false }),
      default: null,
    },
    at: { type: Date, required: true },
  },
  { collection: 'test_processor_charges', versionKey: false },
)

export type CheckoutDoc = InferSchemaType<typeof checkoutSchema>
export type SettlementDoc = InferSchemaType<typeof settlementSchema>
export type PaymentRecordDoc = InferSchemaType<typeof paymentRecordSchema>
export type ProofSlotDoc = InferSchemaType<typeof proofSlotSchema>
export type AppLinkDoc = InferSchemaType<typeof appLinkSchema>
export type TestChargeDoc = InferSchemaType<typeof testChargeSchema>

export interface PaymentsModels {
  Checkout: Model<CheckoutDoc>
  Settlement: Model<SettlementDoc>
  PaymentRecord: Model<PaymentRecordDoc>
  ProofSlot: Model<ProofSlotDoc>
  AppLink: Model<AppLinkDoc>
  TestCharge: Model<TestChargeDoc>
  Outbox: OutboxModel
}

export async function createPaymentsModels(conn: Connection): Promise<PaymentsModels> {
  const models: PaymentsModels = {
    Checkout: conn.model<CheckoutDoc>('Checkout', checkoutSchema),
    Settlement: conn.model<SettlementDoc>('Settlement', settlementSchema),
    PaymentRecord: conn.model<PaymentRecordDoc>('PaymentRecord', paymentRecordSchema),
    ProofSlot: conn.model<ProofSlotDoc>('ProofSlot', proofSlotSchema),
    AppLink: conn.model<AppLinkDoc>('AppLink', appLinkSchema),
    TestCharge: conn.model<TestChargeDoc>('TestCharge', testChargeSchema),
    Outbox: await createOutboxModel(conn, 'payments'),
  }
  await Promise.all([models.Checkout.init(), models.Settlement.init(), models.PaymentRecord.init(), models.ProofSlot.init(), models.AppLink.init()])
  return models
}

/** The payments domain's own connection and models. */
export const connectPayments = (mongoUrl: string) => connectDomain(mongoUrl, createPaymentsModels)

/** Re-exported for this domain's code: the one check lives in the subgraph kit. */
export { isDuplicateKeyError } from '@svc/subgraph-server'
