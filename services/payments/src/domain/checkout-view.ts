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

/** A checkout's own page: its browser link. */
export const ownPageOf = (d: Pick<PaymentsDomain, 'checkoutUrl'>, browserToken: string): string => `${d.checkoutUrl.replace(/\/+$/, '')}/checkout/${browserToken}`

/** The page's view; `ownPage` is where a checkout without return and cancel URLs sends the buyer back to. */
export function toCheckoutView(c: StoredCheckout, ownPage: string): CheckoutView {
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
    returnUrl: c.returnUrl ?? ownPage,
    cancelUrl: c.cancelUrl ?? ownPage,
    expiresAt: new Date(c.expiresAt).toISOString(),
    ref: refString(c.ref),
  }
}

/** The checkout of a browser token, settled when due; `reload` reads it again after an action, `view` answers it. */
export async function findByBrowserToken(
  d: PaymentsDomain,
  browserToken: string,
): Promise<{ checkout: StoredCheckout; reload: () => Promise<StoredCheckout | null>; view: (c: StoredCheckout) => CheckoutView }> {
  if (typeof browserToken !== 'string' || !tokenEnvironment('browser', browserToken)) {
    throw new ContractError('InvalidToken', 'this is not a checkout link')
  }
  const hash = hashToken(browserToken)
  const reload = () => d.models.Checkout.findOne({ browserTokenHash: hash }).lean() as Promise<StoredCheckout | null>
  const checkout = await reload()
  if (!checkout) throw new ContractError('NotFound', 'no checkout for this link')
  const ownPage = ownPageOf(d, browserToken)
  return { checkout: await settleOnRead(d, checkout, reload), reload, view: (c) => toCheckoutView(c, ownPage) }
}

/** The hosted page's view of a checkout (its browser token), expired or finished first when due. */
export async function getCheckout(d: PaymentsDomain, browserToken: string): Promise<CheckoutView> {
  const { checkout, view } = await findByBrowserToken(d, browserToken)
  return view(checkout)
}
