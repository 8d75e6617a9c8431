/** The interface every payment processor implements, and what it is asked to charge. */

/** A card as the checkout page collected it, already checked for form (digits only, Luhn, expiry, CVC). */
export interface Card {
  /** digits only */
  number: string
  expMonth: number
  /** four digits */
  expYear: number
  cvc: string
  name: string | null
}

export interface ChargeRequest {
  checkoutId: string
  /** integer minor units: what the buyer pays (the checkout's total) */
  amount: number
  currency: string
  card: Card
  /** the same for every attempt to charge one checkout: a processor charges it at most once */
  idempotencyKey: string
}

/** Declines are the buyer's card; `processing_error` is the processor's own failure. */
export type ChargeFailureCode = 'card_declined' | 'insufficient_funds' | 'test_card_required' | 'processing_error'

export type ChargeResult = { ok: true; chargeId: string } | { ok: false; code: ChargeFailureCode; message: string }

export interface PaymentProcessor {
  /** stored on the settlement and in the payment record's `processor` */
  name: string
  charge(req: ChargeRequest): Promise<ChargeResult>
  /**
   * What became of the charge under an idempotency key whose answer was lost (the call timed out or failed, or the
   * process died during it): the processor's answer, or null when it has no charge under the key. Null also closes
   * the key, so a charge request still on its way is refused and nothing is ever charged under it (Stripe: retrieve
   * the PaymentIntent, cancel it unless it succeeded). Throws when the processor cannot tell now.
   */
  resolveCharge(idempotencyKey: string): Promise<ChargeResult | null>
}
