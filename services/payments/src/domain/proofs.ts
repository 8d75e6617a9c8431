/**
 * The creator-proof slot of a payment record (money.svc.payment.registerCreatorProof / declineRecord). A slot is
 * pending until the first of: a proof registered (by an app the recipient delegated to) or the slot declined. That
 * first decision is the insert of the slot's `proof_slots` document (unique `_id` = payment URI), so concurrent calls
 * cannot both win. Repeating the decision that won gives the same answer; anything else is NotAllowed.
 */
import { isValidCid } from '@atproto/common'
import { ContractError } from '@svc/errors'
import { isDuplicateKeyError, type ProofSlotDoc } from '../models'
import { graphemeLength, hasControlCharacters, parseRecordUri, type Environment } from '@svc/vocabulary'
import { nowOf, type PaymentsDomain, type ServingPayments } from './context'
import type { CreatorProof as CreatorProofView, DeclinedRecord as DeclinedRecordView, DeclineRecordInput, RegisterCreatorProofInput } from '../generated/graph-types'

export type { CreatorProofView, DeclinedRecordView, DeclineRecordInput, RegisterCreatorProofInput }

const MAX_REASON_GRAPHEMES = 300
const MAX_REASON_LENGTH = 3000

type Slot = ProofSlotDoc & { _id: string }

/** The payment record of this app in this environment; another app's record is NotFound too. */
async function ownRecord(d: PaymentsDomain, appDid: string, environment: Environment, paymentUri: string) {
  if (typeof paymentUri !== 'string' || !parseRecordUri(paymentUri)) throw new ContractError('InvalidRequest', 'paymentUri must be an AT-URI')
  const record = await d.models.PaymentRecord.findOne({ uri: paymentUri, environment, appDid }, { uri: 1, recipientDid: 1 }).lean()
  if (!record) throw new ContractError('NotFound', `no payment record ${paymentUri} of this app in ${environment}`)
  return record
}

/** Inserts the slot's decision; the stored slot when another decision was there first. */
async function claimSlot(d: PaymentsDomain, slot: Slot): Promise<{ won: true } | { won: false; existing: Slot }> {
  try {
    await d.models.ProofSlot.create(slot)
    return { won: true }
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err
  }
  const existing = (await d.models.ProofSlot.findById(slot._id).lean()) as Slot | null
  if (!existing) throw new Error(`proof slot ${slot._id} is neither insertable nor readable`)
  return { won: false, existing }
}

/** Copies the slot's state onto the payment record (every call writes it again, so it converges). */
async function mirror(d: PaymentsDomain, slot: Slot): Promise<void> {
  await d.models.PaymentRecord.updateOne(
    { uri: slot._id },
    { $set: { proof: { status: slot.status, proofUri: slot.proofUri ?? null, proofCid: slot.proofCid ?? null, at: slot.at } } },
  )
}

/** The creator delegated proof registration to the app when its approval is current and enables public records. */
export async function registerCreatorProof(d: ServingPayments, input: { appDid: string; input: RegisterCreatorProofInput }): Promise<CreatorProofView> {
  const { paymentUri, recipientDid, proofUri, proofCid } = input.input
  const { environment, delegated } = await d.facts.proofDelegation(input.appDid, input.input.environment ?? null, recipientDid)
  const record = await ownRecord(d, input.appDid, environment, paymentUri)
  if (recipientDid !== record.recipientDid) throw new ContractError('NotAllowed', `${recipientDid} is not the recipient of this payment`)
  // a repeat of a registration that stands answers it, whatever became of the delegation since (idempotent per
  // payment and proof); only a new registration needs a current delegation
  const registered = (await d.models.ProofSlot.findById(paymentUri).lean()) as Slot | null
  if (registered?.status === 'registered' && registered.proofUri === proofUri && registered.proofCid === proofCid) {
    await mirror(d, registered)
    return { paymentUri, proofUri, proofCid, status: 'registered', registeredAt: new Date(registered.at).toISOString() }
  }
  if (!delegated) throw new ContractError('NotAllowed', 'the recipient has not delegated proof registration to this app')
  const proof = typeof proofUri === 'string' ? parseRecordUri(proofUri) : null
  if (!proof) throw new ContractError('InvalidRequest', 'proofUri must be an AT-URI')
  if (proof.repo !== recipientDid) throw new ContractError('InvalidRequest', "proofUri must name a record in the recipient's repository")
  if (typeof proofCid !== 'string' || proofCid.length > 256 || !(await isValidCid(proofCid))) throw new ContractError('InvalidRequest', 'proofCid must be a CID')

  const slot: Slot = {
    _id: paymentUri,
    environment,
    appDid: input.appDid,
    status: 'registered',
    recipientDid,
    proofUri,
    proofCid,
    reason: null,
    at: nowOf(d),
  }
  const claim = await claimSlot(d, slot)
  const stored = claim.won ? slot : claim.existing
  if (!claim.won) {
    if (stored.status === 'declined') throw new ContractError('NotAllowed', 'the proof slot of this payment was declined')
    if (stored.proofUri !== proofUri || stored.proofCid !== proofCid) {
      throw new ContractError('NotAllowed', 'a different proof is already registered for this payment')
    }
  }
  await mirror(d, stored)
  return { paymentUri, proofUri, proofCid, status: 'registered', registeredAt: new Date(stored.at).toISOString() }
}

export async function declinePaymentRecord(d: ServingPayments, input: { appDid: string; input: DeclineRecordInput }): Promise<DeclinedRecordView> {
  const { paymentUri } = input.input
  const environment = await d.facts.environment(input.appDid, input.input.environment ?? null)
  let reason: string | null = null
  if (input.input.reason !== undefined && input.input.reason !== null) {
    reason = String(input.input.reason).trim() || null
    if (reason && (reason.length > MAX_REASON_LENGTH || graphemeLength(reason) > MAX_REASON_GRAPHEMES)) {
      throw new ContractError('InvalidRequest', `reason must be at most ${MAX_REASON_GRAPHEMES} characters`)
    }
    if (reason && hasControlCharacters(reason.replace(/[\n\t]/g, ' '))) throw new ContractError('InvalidRequest', 'reason must not contain control characters')
  }
  await ownRecord(d, input.appDid, environment, paymentUri)
  const slot: Slot = {
    _id: paymentUri,
    environment,
    appDid: input.appDid,
    status: 'declined',
    recipientDid: null,
    proofUri: null,
    proofCid: null,
    reason,
    at: nowOf(d),
  }
  const claim = await claimSlot(d, slot)
  const stored = claim.won ? slot : claim.existing
  if (stored.status !== 'declined') throw new ContractError('NotAllowed', 'a proof is already registered for this payment')
  await mirror(d, stored)
  return { paymentUri, status: 'declined', declinedAt: new Date(stored.at).toISOString() }
}
