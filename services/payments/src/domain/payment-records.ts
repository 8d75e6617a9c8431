/**
 * Payment records: the public fact of a completed payment. `at://<serviceDid>/money.svc.payment.record/<tid>` and the
 * CID (CIDv1, DAG-CBOR, sha-256) of the record's DAG-CBOR encoding. The TID is chosen when the payment is claimed and
 * kept on the settlement, and `createdAt` is the settlement time, so building the record again gives the same bytes
 * and CID, and the URI it was first stored under (storePaymentRecord finds it by the checkout: a record whose TID
 * another checkout's took is stored under the next of its checkout's keys, recordTidCandidates). Should the
 * settlement's time change after the record was stored (two outcome writes that met), the stored record, its CID and
 * its time stand: storePaymentRecord answers them.
 */
import { createHash } from 'node:crypto'
import { cidForCbor, TID } from '@atproto/common'
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

/**
 * The record keys a checkout's record may take, in order: the TID its settlement chose, then keys of the same time
 * with clock ids 32 and up, picked from the checkout's id. A process's own TIDs use clock ids 0 to 31, so two
 * payments processes can both make the first; the others are this checkout's alone, and every finisher of the
 * checkout tries them in the same order.
 */
export function recordTidCandidates(tid: string, checkoutId: string): string[] {
  const timestamp = TID.fromStr(tid).timestamp()
  const start = createHash('sha256').update(checkoutId).digest().readUInt16BE(0)
  return [tid, ...Array.from({ length: 4 }, (_, k) => TID.fromTime(timestamp, 32 + ((start + k) % 992)).toString())]
}

/**
 * Stores the record of a checkout once; a repeat (also a concurrent one) finds the stored one. A key another
 * checkout's record took (two processes chose the same TID) moves this record to the checkout's next key: money
 * has moved, so the payment must complete. `createdAt` is the stored record's: the payment's time from then on.
 */
export async function storePaymentRecord(d: PaymentsDomain, checkout: StoredCheckout, built: BuiltPaymentRecord): Promise<{ uri: string; cid: string; createdAt: Date }> {
  for (const tid of recordTidCandidates(built.tid, checkout._id)) {
    const uri = paymentRecordUri(d.serviceDid, tid)
    try {
      await d.models.PaymentRecord.create({
        uri,
        cid: built.cid,
        tid,
        checkoutId: checkout._id,
        environment: checkout.environment,
        appDid: checkout.appDid,
        recipientDid: checkout.recipientDid,
        recordJson: JSON.stringify(built.record),
        proof: null,
      })
      return { uri, cid: built.cid, createdAt: new Date(built.record.createdAt) }
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err
    }
    const existing = await d.models.PaymentRecord.findOne({ checkoutId: checkout._id }, { uri: 1, cid: 1, recordJson: 1 }).lean()
    if (existing) return { uri: existing.uri, cid: existing.cid, createdAt: new Date((JSON.parse(existing.recordJson) as PaymentRecordValue).createdAt) }
  }
  throw new Error(`payment record ${built.uri} collides with other checkouts' records under every key it may take`)
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
