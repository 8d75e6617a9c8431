/** A pending checkout closed without a payment by the hosted checkout page: the buyer cancels, or card testing locks it. */
import type { FailureReason, SettlementClaim } from '../models'
import { checkoutClosed } from './checkout-errors'
import { findByBrowserToken, type CheckoutView } from './checkout-view'
import type { PaymentsDomain } from './context'
import { claimSettlement, FAILURE_MESSAGES, finishSettlement, recoverCheckout } from './settlement'

async function closePending(d: PaymentsDomain, browserToken: string, by: SettlementClaim, reason: FailureReason & keyof typeof FAILURE_MESSAGES): Promise<CheckoutView> {
  const { checkout, reload, view } = await findByBrowserToken(d, browserToken)
  if (checkout.status !== 'pending') throw checkoutClosed()
  const won = await claimSettlement(d, checkout, by, { outcome: { ok: false, reason, code: reason, message: FAILURE_MESSAGES[reason] } })
  if (!won) {
    await recoverCheckout(d, checkout._id)
    throw checkoutClosed()
  }
  await finishSettlement(d, checkout._id)
  const after = await reload()
  if (!after) throw new Error(`checkout ${checkout._id} vanished`)
  return view(after)
}

/** The buyer cancels a pending checkout: it fails as `canceled` (a closed one: CheckoutClosed). */
export function cancelCheckout(d: PaymentsDomain, browserToken: string): Promise<CheckoutView> {
  return closePending(d, browserToken, 'cancel', 'canceled')
}

/**
 * A refused card form past the checkout's card-testing limit (the page counts them, docs/operations.md "Card
 * testing"): it fails as `too_many_attempts` without a charge (a closed one: CheckoutClosed).
 */
export function lockCheckout(d: PaymentsDomain, browserToken: string): Promise<CheckoutView> {
  return closePending(d, browserToken, 'lock', 'too_many_attempts')
}
