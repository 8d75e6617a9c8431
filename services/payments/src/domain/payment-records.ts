/**
 * Payment records: the public fact of a completed payment. `at://<serviceDid>/money.svc.payment.record/<tid>` and the
 * CID (CIDv1, DAG-CBOR, sha-256) of the record's DAG-CBOR encoding. The TID is chosen when the payment is claimed and
 * kept on the settlement, and `createdAt` is the settlement time, so building the record again gives the same URI,
 * bytes and CID.
 */
import { cidForCbor } from '@atproto/common'
import { ContractError } from '@svc/errors'
import { isDuplicateKeyError, type CheckoutDoc, type PaymentRecordDoc, type SettlementDoc } from '../models'
import { parseEnvironment, type Environment } from '@svc/vocabulary'
import type { PaymentsDomain } from './context'
import type { MoneySvcPaymentRecord } from '@svc/lexicons/types'
import type { PaymentRecord as PaymentRecordView, ProofSlot as ProofSlotView } from '../generated/graph-types'

export const PAYMENT_RECORD_COLLECTION = 'money.svc.payment.record' satisfies MoneySvcPaymentRecord['$type']

/** The record as encoded (DAG-CBOR): its lexicon, `lexicons/money/svc/payment/record.json`. */
export type PaymentRecordValue = MoneySvcPaymentRecord

export interface BuiltPaymentRecord {
  uri: string
  cid: string
  tid: string
  record: PaymentRecordValue
}

type StoredCheckout = CheckoutDoc & { _id: string }
type StoredSettlement = SettlementDoc & { _id: string }

export function paymentRecordUri(serviceDid: string, tid: string): string {
  return `at://${serviceDid}/${PAYMENT_RECORD_COLLECTION}/${tid}`
}

export async function buildPaymentRecord(serviceDid: string, checkout: StoredCheckout, settlement: StoredSettlement): Promise<BuiltPaymentRecord> {
  if (!settlement.recordTid || !settlement.settledAt) throw new Error(`settlement ${settlement._id} has no record key or time`)
  const record: PaymentRecordValue = {
    $type: PAYMENT_RECORD_COLLECTION,
    app: checkout.appDid,
    recipient: checkout.recipientDid,
    paymentType: checkout.paymentType,
    amount: checkout.amount,
    currency: checkout.currency,
    serviceFee: checkout.serviceFee,
    buyerFee: checkout.buyerFee,
    appFee: checkout.appFee,
    total: checkout.total,
    appOrderId: checkout.appOrderId,
    processor: settlement.processor ?? 'unknown',
    environment: checkout.environment as Environment,
    createdAt: new Date(settlement.settledAt).toISOString(),
  }
  const cid = (await cidForCbor(record)).toString()
  return { uri: paymentRecordUri(serviceDid, settlement.recordTid), cid, tid: settlement.recordTid, record }
}

/** Stores the record of a checkout once; a repeat (also a concurrent one) finds the stored one. */
export async function storePaymentRecord(d: PaymentsDomain, checkout: StoredCheckout, built: BuiltPaymentRecord): Promise<{ uri: string; cid: string }> {
  try {
    await d.models.PaymentRecord.create({
      uri: built.uri,
      cid: built.cid,
      tid: built.tid,
      checkoutId: checkout._id,
      environment: checkout.environment,
      appDid: checkout.appDid,
      recipientDid: checkout.recipientDid,
      recordJson: JSON.stringify(built.record),
      proof: null,
    })
    return { uri: built.uri, cid: built.cid }
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err
  }
  const existing = await d.models.PaymentRecord.findOne({ checkoutId: checkout._id }, { uri: 1, cid: 1 }).lean()
  if (!existing) throw new Error(`payment record ${built.uri} collides with another checkout's record`)
  return { uri: existing.uri, cid: existing.cid }
}

export type { PaymentRecordView, ProofSlotView }

type StoredRecord = PaymentRecordDoc & { _id: unknown }

export function toPaymentRecordView(doc: StoredRecord, slot: { status: string; proofUri?: string | null; proofCid?: string | null; at: Date } | null): PaymentRecordView {
  const { $type, ...record } = JSON.parse(doc.recordJson) as PaymentRecordValue
  return {
    ...record,
    recordType: $type,
    uri: doc.uri,
    cid: doc.cid,
    checkoutId: doc.checkoutId,
    proof: slot
      ? { status: slot.status as 'registered' | 'declined', proofUri: slot.proofUri ?? null, proofCid: slot.proofCid ?? null, at: slot.at.toISOString() }
      : { status: 'pending', proofUri: null, proofCid: null, at: null },
  }
}

/** Operators: a payment record by URI in an environment, with its proof slot; null when there is none. */
export async function findPaymentRecord(d: PaymentsDomain, uri: string, environment: string): Promise<PaymentRecordView | null> {
  const env = parseEnvironment(environment)
  if (typeof uri !== 'string' || uri === '') throw new ContractError('InvalidRequest', 'uri is required')
  const doc = await d.models.PaymentRecord.findOne({ uri, environment: env }).lean()
  if (!doc) return null
  const slot = await d.models.ProofSlot.findById(uri).lean()
  return toPaymentRecordView(doc, slot)
}
