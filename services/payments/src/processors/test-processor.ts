/**
 * The built-in processor of the test environment. No money moves. Stripe-style test card numbers:
 *
 *   4242 4242 4242 4242   succeeds
 *   4000 0000 0000 0002   declined: "Your card was declined."
 *   4000 0000 0000 9995   declined: insufficient funds
 *   4000 0000 0000 0119   processor error (the checkout fails with processor_error)
 *   any other number      declined: a test checkout takes test card numbers only
 *
 * (A number that fails the Luhn check never reaches a processor: the card form refuses it first.) No money moves, but
 * the ledger is real: it is what makes a lost answer recoverable (docs/decisions.md, "Recovery").
 */
import { createHash } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Model } from 'mongoose'
import { isDuplicateKeyError, type TestChargeDoc } from '../models'
import type { ChargeFailureCode, ChargeRequest, ChargeResult, PaymentProcessor } from './processor'

export const TEST_CARDS = {
  succeeds: '4242424242424242',
  declined: '4000000000000002',
  insufficientFunds: '4000000000009995',
  processingError: '4000000000000119',
} as const

/** what the test processor answers for a card: the rules above, deterministic per idempotency key */
function answer(req: ChargeRequest): ChargeResult {
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

/**
 * Keeps a ledger, as a real processor does: one entry per idempotency key (its unique `_id` decides), so a repeated
 * charge gets the first answer, and `resolveCharge` can tell after a lost answer whether a charge happened.
 */
export class TestProcessor implements PaymentProcessor {
  readonly name = 'test'

  constructor(
    private readonly ledger: Model<TestChargeDoc>,
    /** `latencyMs`: the wait before a charge reaches the ledger, as a real processor's round trip */
    private readonly opts: { latencyMs?: number } = {},
  ) {}

  async charge(req: ChargeRequest): Promise<ChargeResult> {
    if (this.opts.latencyMs) await sleep(this.opts.latencyMs)
    const recorded = await this.enter(req.idempotencyKey, answer(req))
    return recorded ?? { ok: false, code: 'processing_error', message: 'This payment was closed before it was charged. No payment was made.' }
  }

  async resolveCharge(idempotencyKey: string): Promise<ChargeResult | null> {
    return this.enter(idempotencyKey, null)
  }

  /** the key's entry: this one when it is the first, else the one recorded before (null: closed without a charge) */
  private async enter(idempotencyKey: string, result: ChargeResult | null): Promise<ChargeResult | null> {
    try {
      await this.ledger.create({ _id: idempotencyKey, result, at: new Date() })
      return result
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err
    }
    const entry = await this.ledger.findById(idempotencyKey).lean()
    if (!entry) throw new Error(`test processor: the ledger entry of ${idempotencyKey} vanished`)
    const r = entry.result
    if (!r) return null
    return r.ok ? { ok: true, chargeId: r.chargeId! } : { ok: false, code: r.code as ChargeFailureCode, message: r.message! }
  }
}
