/**
 * The hosted checkout page's view of a checkout (its shape is the SDL's CheckoutView), and how the page's calls find it: by the hash of its browser token,
 * expired or finished first when due (settleOnRead).
 */
import { ContractError } from '@svc/errors'
import type { CheckoutView, PaymentRef } from '../generated/graph-types'
import type { CheckoutDoc } from '../models'
import type { PaymentsDomain } from './context'
import { settleOnRead } from './settlement'
import { hashToken, tokenEnvironment } from './tokens'

export type StoredCheckout = CheckoutDoc & { _id: string }

export type { CheckoutView, PaymentRef }

export function refString(ref: { uri?: string | null; cid?: string | null } | null | undefined): PaymentRef | null {
  return ref?.uri && ref.cid ? { uri: ref.uri, cid: ref.cid } : null
}

export function toCheckoutView(c: StoredCheckout): CheckoutView {
  return {
    id: c._id,
    environment: c.environment,
    status: c.status,
    failureReason: c.failureReason ?? null,
    failureMessage: c.failureMessage ?? null,
    recipientDid: c.recipientDid,
    recipientName: c.recipientName ?? null,
    paymentType: c.paymentType,
    holdId: c.holdId ?? null,
    description: c.description,
    currency: c.currency,
    amount: c.amount,
    serviceFee: c.serviceFee,
    buyerFee: c.buyerFee,
    total: c.total,
    returnUrl: c.returnUrl,
    cancelUrl: c.cancelUrl,
    expiresAt: new Date(c.expiresAt).toISOString(),
    ref: refString(c.ref),
  }
}

/** The checkout of a browser token, settled when due; `reload` reads it again after an action. */
export async function findByBrowserToken(
  d: PaymentsDomain,
  browserToken: string,
): Promise<{ checkout: StoredCheckout; reload: () => Promise<StoredCheckout | null> }> {
  if (typeof browserToken !== 'string' || !tokenEnvironment('browser', browserToken)) {
    throw new ContractError('InvalidToken', 'this is not a checkout link')
  }
  const hash = hashToken(browserToken)
  const reload = () => d.models.Checkout.findOne({ browserTokenHash: hash }).lean() as Promise<StoredCheckout | null>
  const checkout = await reload()
  if (!checkout) throw new ContractError('NotFound', 'no checkout for this link')
  return { checkout: await settleOnRead(d, checkout, reload), reload }
}

/** The hosted page's view of a checkout (its browser token), expired or finished first when due. */
export async function getCheckout(d: PaymentsDomain, browserToken: string): Promise<CheckoutView> {
  return toCheckoutView((await findByBrowserToken(d, browserToken)).checkout)
}
