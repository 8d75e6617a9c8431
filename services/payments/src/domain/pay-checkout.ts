/** The buyer pays on the hosted checkout page: the one call that charges a card. */
import { TID } from '@atproto/common'
import type { Environment } from '@svc/vocabulary'
import pTimeout from 'p-timeout'
import type { Card, PaymentProcessor } from '../processors'
import { validateCard, type CardInput } from './card'
import { checkoutClosed } from './checkout-errors'
import { findByBrowserToken, type CheckoutView, type StoredCheckout } from './checkout-view'
import { holdsOf, nowOf, processorTimeoutOf, type PaymentsDomain, type ServingPayments } from './context'
import { authorizationOf } from './authorization'
import { askProcessor, chargeKeyOf, claimSettlement, expireCheckout, FAILURE_MESSAGES, finishSettlement, keepOutcome, outcomeOf, recoverCheckout, type SettlementOutcome } from './settlement'

/**
 * Charges the card. When the answer is lost (the call failed or timed out), the processor is asked what became of the
 * charge, which also closes the key; null when it cannot tell now (the checkout stays processing, and recovery asks
 * again).
 */
async function charge(d: PaymentsDomain, processor: PaymentProcessor, checkout: StoredCheckout, card: Card): Promise<SettlementOutcome | null> {
  const timeoutMs = processorTimeoutOf(d)
  const idempotencyKey = chargeKeyOf(checkout._id)
  try {
    const result = await pTimeout(processor.charge({ checkoutId: checkout._id, amount: checkout.total, currency: checkout.currency, card, idempotencyKey }), {
      milliseconds: timeoutMs,
      message: `processor ${processor.name} did not answer within ${timeoutMs} ms`,
    })
    return outcomeOf(result)
  } catch (err) {
    // never log the card: only the processor's error
    d.logger?.error({ checkoutId: checkout._id, err: (err as Error).message }, 'payment processor call failed; asking the processor what became of it')
  }
  return askProcessor(d, () => processor, checkout._id, { ok: false, reason: 'processor_error', code: 'processing_error', message: FAILURE_MESSAGES.processorUnreachable })
}

/**
 * Why the recipient no longer lets this app take the payment, or null. A checkout stays payable for a day (or more),
 * so what initiate decided on is read again: the approval it was started under revoked or blocked, or no longer for
 * this payment type; the app's share above what the creator accepts (or the operator allows) now; the recipient no
 * longer payable. A ticket checkout is the organizer's sale (docs/tickets.md), an app's own sale needs no approval.
 */
async function noLongerAuthorized(d: ServingPayments, checkout: StoredCheckout): Promise<string | null> {
  if (checkout.selfSale || checkout.holdId) return null
  const now = authorizationOf(await d.facts.checkout(checkout.appDid, checkout.environment, checkout.recipientDid), checkout.recipientDid, checkout.paymentType)
  if (!now.ok) return now.code
  // the grant it was started under (not the same request revoked, or given new terms, and approved again since: a
  // new revision), granting at least the share it was priced with; a checkout started before revisions were kept is
  // checked on the id alone
  if (now.approvalId !== checkout.approvalId) return 'approval_ended'
  if (checkout.approvalRevision != null && now.approvalRevision !== checkout.approvalRevision) return 'approval_ended'
  if (checkout.feeShareBps > now.feeShareBps) return 'fee_share_lowered'
  return null
}

/**
 * The buyer pays: the card form is checked first (InvalidRequest; the checkout stays payable), then the settlement
 * is claimed (someone else had it: CheckoutClosed), the checkout is `processing` while the processor charges, and
 * the outcome ends it (completed, or failed as declined / processor_error). Never charges a checkout twice.
 *
 * A ticket checkout first secures its hold (the tickets domain keeps its seats); a hold that lapsed ends the checkout
 * as expired with nothing charged.
 */
export async function payCheckout(d: ServingPayments, browserToken: string, cardInput: CardInput): Promise<CheckoutView> {
  const { checkout, reload, view } = await findByBrowserToken(d, browserToken)
  if (checkout.status !== 'pending') throw checkoutClosed()
  // this request closed the checkout, or another submission claimed it first and has not marked it yet (still
  // pending): that one's payment is under way, CheckoutClosed
  const closedView = async () => {
    const after = (await reload())!
    if (after.status === 'pending') throw checkoutClosed()
    return view(after)
  }
  const card = validateCard(cardInput, nowOf(d))
  const processor = d.processors.forEnvironment(checkout.environment as Environment)
  const refused = await noLongerAuthorized(d, checkout)
  if (refused) {
    // closed through the one settlement claim, like a cancel: nothing is charged, and a pay racing it finds it closed
    const outcome = { ok: false, reason: 'not_authorized' as const, code: refused, message: FAILURE_MESSAGES.not_authorized }
    if (await claimSettlement(d, checkout, 'refusal', { outcome })) await finishSettlement(d, checkout._id)
    else await recoverCheckout(d, checkout._id)
    d.logger?.warn({ checkoutId: checkout._id, appDid: checkout.appDid, reason: refused }, 'checkout refused at pay: the recipient no longer authorizes it')
    return closedView()
  }
  if (checkout.holdId && !(await holdsOf(d).secure(checkout.holdId))) {
    await expireCheckout(d, checkout)
    return closedView()
  }
  const won = await claimSettlement(d, checkout, 'payment', { processor: processor.name, recordTid: TID.nextStr() })
  if (!won) {
    await recoverCheckout(d, checkout._id)
    throw checkoutClosed()
  }
  // the mark comes before the charge: a claim left unmarked is settled after UNANSWERED_PAYMENT_CLAIM_MS (the processor
  // has no charge under its key, and closes it), and a process that marks it after that finds the checkout failed
  const marked = await d.models.Checkout.updateOne({ _id: checkout._id, status: 'pending' }, { $set: { status: 'processing' } })
  if (marked.matchedCount !== 1) throw checkoutClosed()
  const outcome = await charge(d, processor, checkout, card)
  if (outcome) {
    await keepOutcome(d, checkout._id, outcome)
    // the outcome is recorded: a finish that fails now (its event, its record, a hold's tickets) is the next read's
    // or the sweep's to do, and the buyer is shown the payment processing, never asked to pay again
    await finishSettlement(d, checkout._id).catch((err: unknown) => {
      d.logger?.warn({ checkoutId: checkout._id, err }, 'the charge is recorded but its settlement could not finish; a read or the sweep finishes it')
    })
  }
  const after = await reload()
  if (!after) throw new Error(`checkout ${checkout._id} vanished`)
  return view(after)
}
