/**
 * The periodic sweep (the service's sweeper, or once: `npm run operator:payments -- sweep`): ends the checkouts no
 * read will end, so every abandoned checkout expires and every recorded outcome is applied.
 */
import type { CheckoutDoc } from '../models'
import { nowOf, type PaymentsDomain } from './context'
import { expireCheckout, recoverCheckout, UNANSWERED_PAYMENT_CLAIM_MS } from './settlement'

/** how far back the sweep looks for payment claims left without outcome on a pending checkout */
const UNMARKED_CLAIMS_WINDOW_MS = 10 * 60 * 1000

type StoredCheckout = CheckoutDoc & { _id: string }

export interface SweepResult {
  expired: number
  recovered: number
  /** checkouts whose settlement failed this time (logged; the next sweep tries again) */
  failed: number
}

/**
 * The periodic sweep: expires pending checkouts past expiresAt and finishes processing ones whose outcome is known
 * (or whose payment claim went stale), and pending ones whose payment claim was never marked. At most `limit` of each
 * per run.
 */
export async function sweepCheckouts(d: PaymentsDomain, opts: { limit?: number } = {}): Promise<SweepResult> {
  const limit = opts.limit ?? 500
  const result: SweepResult = { expired: 0, recovered: 0, failed: 0 }
  const each = async (checkoutId: string, step: () => Promise<void>) => {
    try {
      await step()
    } catch (err) {
      result.failed++
      d.logger?.error({ err, checkoutId }, 'checkout sweep: settling failed')
    }
  }
  const due = await d.models.Checkout.find({ status: 'pending', expiresAt: { $lte: nowOf(d) } }, { _id: 1, environment: 1, appDid: 1 })
    .limit(limit)
    .lean()
  for (const checkout of due) {
    await each(checkout._id as string, async () => {
      const outcome = await expireCheckout(d, checkout as Pick<StoredCheckout, '_id' | 'environment' | 'appDid'>)
      if (outcome === 'expired') result.expired++
      else if (outcome === 'recovered') result.recovered++
    })
  }
  const processing = await d.models.Checkout.find({ status: 'processing' }, { _id: 1 }).limit(limit).lean()
  // payment claims whose checkout may never have been marked processing (recoverCheckout settles those): the claims
  // of the last UNMARKED_CLAIMS_WINDOW_MS older than a minute; older ones are settled by the expiry of their checkout
  const now = nowOf(d).getTime()
  // found by the equality FerretDB pushes down (the claims awaiting an answer are those in flight, few); their age here
  const awaiting = await d.models.Settlement.find({ awaiting: true }, { _id: 1, by: 1, claimedAt: 1 }).lean()
  const unmarked = awaiting
    .filter((s) => s.by === 'payment' && s.claimedAt.getTime() >= now - UNMARKED_CLAIMS_WINDOW_MS && s.claimedAt.getTime() <= now - UNANSWERED_PAYMENT_CLAIM_MS)
    .slice(0, limit)
  for (const id of new Set([...processing, ...unmarked].map((c) => c._id as string))) {
    await each(id, async () => {
      if (await recoverCheckout(d, id)) result.recovered++
    })
  }
  return result
}
