/** The buyer cancels on the hosted checkout page. */
import { checkoutClosed } from './checkout-errors'
import { findByBrowserToken, toCheckoutView, type CheckoutView } from './checkout-view'
import type { PaymentsDomain } from './context'
import { claimSettlement, FAILURE_MESSAGES, finishSettlement, recoverCheckout } from './settlement'

/** The buyer cancels a pending checkout: it fails as `canceled` (a closed one: CheckoutClosed). */
export async function cancelCheckout(d: PaymentsDomain, browserToken: string): Promise<CheckoutView> {
  const { checkout, reload } = await findByBrowserToken(d, browserToken)
  if (checkout.status !== 'pending') throw checkoutClosed()
  const won = await claimSettlement(d, checkout, 'cancel', {
    outcome: { ok: false, reason: 'canceled', code: 'canceled', message: FAILURE_MESSAGES.canceled },
  })
  if (!won) {
    await recoverCheckout(d, checkout._id)
    throw checkoutClosed()
  }
  await finishSettlement(d, checkout._id)
  const after = await reload()
  if (!after) throw new Error(`checkout ${checkout._id} vanished`)
  return toCheckoutView(after)
}
