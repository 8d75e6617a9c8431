/**
 * The periodic sweep (the service's sweeper, or once: `npm run operator:payments -- sweep`): ends the checkouts no
 * read will end, so every abandoned checkout expires and every recorded outcome is applied.
 */
import type { CheckoutDoc } from '../models'
import { nowOf, type PaymentsDomain } from './context'
import { CLOSING_CLAIMS, expireCheckout, finishSettlement, recoverCheckout, UNANSWERED_PAYMENT_CLAIM_MS } from './settlement'

type StoredCheckout = CheckoutDoc & { _id: string }

export interface SweepResult {
  expired: number
  recovered: number
  /** checkouts whose settlement failed this time (logged; the next sweep tries again) */
  failed: number
  /** where the next run goes on when this one stopped at its limit (the service's sweeper passes it back) */
  resumeAfter: SweepCursor
}

/**
 * The last checkout id a run visited of each kind, when it stopped at its limit. The next run starts after it, so
 * checkouts that stay due (a processor that cannot answer, a gateway away) never keep the others from their turn.
 */
export interface SweepCursor {
  expiring?: string
  processing?: string
  /** payment claims without an answer after a minute, or not yet applied */
  unanswered?: string
  /** closes (cancel, lock, refusal) not yet applied */
  closing?: string
}

/**
 * The periodic sweep: expires pending checkouts past expiresAt and finishes processing ones whose outcome is known
 * (or whose payment claim went stale), and pending ones whose payment claim was never marked. At most `limit` of each
 * per run, in id order from `after`.
 */
export async function sweepCheckouts(d: PaymentsDomain, opts: { limit?: number; after?: SweepCursor } = {}): Promise<SweepResult> {
  const limit = opts.limit ?? 500
  const after = opts.after ?? {}
  const result: SweepResult = { expired: 0, recovered: 0, failed: 0, resumeAfter: {} }
  /** the cursor of a kind is kept only when its page is full (else the next run starts over) */
  const turn = <T extends { _id: unknown }>(kind: keyof SweepCursor, docs: T[]) => {
    const last = docs.at(-1)
    if (docs.length === limit && last) result.resumeAfter[kind] = last._id as string
    return docs
  }
  /** one page of a kind in id order */
  const page = async <T extends { _id: unknown }>(kind: keyof SweepCursor, filter: Record<string, unknown>, fields: Record<string, 1>) => {
    const from = after[kind]
    return turn(kind, (await d.models.Checkout.find(from ? { ...filter, _id: { $gt: from } } : filter, fields).sort({ _id: 1 }).limit(limit).lean()) as unknown as T[])
  }
  /** one page of a kind of the awaiting claims, all of them read at once, in id order */
  const pageOf = <T extends { _id: unknown }>(kind: keyof SweepCursor, claims: T[]) => {
    const from = after[kind]
    return turn(kind, (from ? claims.filter((c) => (c._id as string) > from) : claims).slice(0, limit))
  }
  const each = async (checkoutId: string, step: () => Promise<void>) => {
    try {
      await step()
    } catch (err) {
      result.failed++
      d.logger?.error({ err, checkoutId }, 'checkout sweep: settling failed')
    }
  }
  const due = await page<Pick<StoredCheckout, '_id' | 'environment' | 'appDid'>>('expiring', { status: 'pending', expiresAt: { $lte: nowOf(d) } }, { _id: 1, environment: 1, appDid: 1 })
  for (const checkout of due) {
    await each(checkout._id as string, async () => {
      const outcome = await expireCheckout(d, checkout)
      if (outcome === 'expired') result.expired++
      else if (outcome === 'recovered') result.recovered++
    })
  }
  const processing = await page<{ _id: string }>('processing', { status: 'processing' }, { _id: 1 })
  // payment claims whose checkout may never have been marked processing (recoverCheckout settles those): those older
  // than a minute, however old (a sweep that was away or slow must not leave one pending until its checkout expires)
  const now = nowOf(d).getTime()
  // found by the equality FerretDB pushes down (the claims awaiting an answer are those in flight, few); their age here.
  // Put in id order here (the query's order is the store's), each kind is taken from its cursor: claims that stay
  // awaiting (a processor that cannot answer for them, a close whose checkout cannot be written) never keep the
  // others from their turn
  const awaiting = (await d.models.Settlement.find({ awaiting: true }, { _id: 1, by: 1, claimedAt: 1 }).lean()).sort((a, b) =>
    (a._id as string) < (b._id as string) ? -1 : (a._id as string) > (b._id as string) ? 1 : 0,
  )
  const unmarked = pageOf(
    'unanswered',
    awaiting.filter((s) => s.by === 'payment' && s.claimedAt.getTime() <= now - UNANSWERED_PAYMENT_CLAIM_MS),
  )
  // closes (a cancel, a lock) whose checkout was not closed after their claim (the request was cut off): their outcome
  // is known, so applying it is all that is left
  const unapplied = pageOf('closing', awaiting.filter((s) => CLOSING_CLAIMS.has(s.by)))
  for (const claim of unapplied) {
    await each(claim._id as string, async () => {
      if (await finishSettlement(d, claim._id as string)) result.recovered++
    })
  }
  for (const id of new Set([...processing, ...unmarked].map((c) => c._id as string))) {
    await each(id, async () => {
      if (await recoverCheckout(d, id)) result.recovered++
    })
  }
  return result
}
