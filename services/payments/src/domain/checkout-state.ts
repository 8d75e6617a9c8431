/**
 * An operator's look at one checkout (`npm run operator:payments -- checkout`): what the checkout page shows, plus
 * its app, order id and settlement. Never its tokens: their hashes and the nonce are not even read.
 */
import { ContractError } from '@svc/errors'
import { parseEnvironment } from '@svc/vocabulary'
import type { FailureReason, SettlementClaim } from '../models'
import { toCheckoutView, type CheckoutView, type StoredCheckout } from './checkout-view'
import type { PaymentsDomain } from './context'

export interface CheckoutState extends Omit<CheckoutView, 'returnUrl' | 'cancelUrl'> {
  /** null: the checkout's own page (its browser link, which an operator is never shown) */
  returnUrl: string | null
  cancelUrl: string | null
  appDid: string
  appOrderId: string
  createdAt: string
  completedAt: string | null
  failedAt: string | null
  /** null until someone (a payment, the buyer's cancel, expiry) claimed the checkout's end */
  settlement: {
    by: SettlementClaim
    claimedAt: string
    processor: string | null
    /** null while a payment's processor call has not answered */
    outcome: { ok: boolean; chargeId: string | null; reason: FailureReason | null; code: string | null; message: string | null } | null
    settledAt: string | null
  } | null
}

/** A checkout by its id, or by the app's order id in an app environment. */
export type CheckoutQuery = { id: string } | { appDid: string; environment: string; appOrderId: string }

const WITHOUT_SECRETS = { nonce: 0, statusTokenHash: 0, browserTokenHash: 0 } as const

const iso = (d: Date | null | undefined): string | null => (d ? new Date(d).toISOString() : null)

export async function findCheckoutState(d: PaymentsDomain, query: CheckoutQuery): Promise<CheckoutState> {
  const filter = 'id' in query ? { _id: query.id } : { appDid: query.appDid, environment: parseEnvironment(query.environment), appOrderId: query.appOrderId }
  const checkout = (await d.models.Checkout.findOne(filter, WITHOUT_SECRETS).lean()) as (StoredCheckout & { createdAt?: Date }) | null
  if (!checkout) {
    const which = 'id' in query ? query.id : `order ${query.appOrderId} of ${query.appDid} in ${query.environment}`
    throw new ContractError('NotFound', `no checkout ${which}`)
  }
  const settlement = await d.models.Settlement.findById(checkout._id).lean()
  return {
    ...toCheckoutView(checkout, ''),
    returnUrl: checkout.returnUrl ?? null,
    cancelUrl: checkout.cancelUrl ?? null,
    appDid: checkout.appDid,
    appOrderId: checkout.appOrderId,
    createdAt: iso(checkout.createdAt) ?? '',
    completedAt: iso(checkout.completedAt),
    failedAt: iso(checkout.failedAt),
    settlement: settlement && {
      by: settlement.by as SettlementClaim,
      claimedAt: new Date(settlement.claimedAt).toISOString(),
      processor: settlement.processor ?? null,
      outcome: settlement.outcome
        ? {
            ok: settlement.outcome.ok,
            chargeId: settlement.outcome.chargeId ?? null,
            reason: (settlement.outcome.reason ?? null) as FailureReason | null,
            code: settlement.outcome.code ?? null,
            message: settlement.outcome.message ?? null,
          }
        : null,
      settledAt: iso(settlement.settledAt),
    },
  }
}
