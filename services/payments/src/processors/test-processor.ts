/**
 * The built-in processor of the test environment. No money moves. Stripe-style test card numbers:
 *
 *   4242 4242 4242 4242   succeeds
 *   4000 0000 0000 0002   declined: "Your card was declined."
 *   4000 0000 0000 9995   declined: insufficient funds
 *   4000 0000 0000 0119   processor error (the checkout fails with processor_error)
 *   any other number      declined: a test checkout takes test card numbers only
 *
 * (A number that fails the Luhn check never reaches a processor: the card form refuses it first.)
 */
import { createHash } from 'node:crypto'
import type { ChargeRequest, ChargeResult, PaymentProcessor } from './processor'

export const TEST_CARDS = {
  succeeds: '4242424242424242',
  declined: '4000000000000002',
  insufficientFunds: '4000000000009995',
  processingError: '4000000000000119',
} as const

export class TestProcessor implements PaymentProcessor {
  readonly name = 'test'

  async charge(req: ChargeRequest): Promise<ChargeResult> {
    switch (req.card.number) {
      case TEST_CARDS.succeeds:
        // deterministic per idempotency key, as a real processor answers a repeat with the same charge
        return { ok: true, chargeId: `ch_test_${createHash('sha256').update(req.idempotencyKey).digest('hex').slice(0, 24)}` }
      case TEST_CARDS.declined:
        return { ok: false, code: 'card_declined', message: 'Your card was declined.' }
      case TEST_CARDS.insufficientFunds:
        return { ok: false, code: 'insufficient_funds', message: 'Your card has insufficient funds.' }
      case TEST_CARDS.processingError:
        return { ok: false, code: 'processing_error', message: 'An error occurred while processing your card. No payment was made.' }
      default:
        return {
          ok: false,
          code: 'test_card_required',
          message: 'Your card was declined: this is a test checkout, so use a test card number such as 4242 4242 4242 4242.',
        }
    }
  }
}
