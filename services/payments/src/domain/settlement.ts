/**
 * The end of a checkout. FerretDB cannot update a document conditionally and atomically, so the one terminal
 * decision of a checkout is the insert of its `settlements` document (unique `_id` = checkout id): whoever inserts
 * first decides (a payment, the buyer's cancel, or expiry); every other contender gets a duplicate-key error and
 * loses. The winner records the outcome on the settlement (a payment: once the processor answered; cancel and expiry
 * with the claim itself), then `finishSettlement` applies it to the checkout.
 *
 * `finishSettlement` only reads the settlement and writes values derived from it (record URI, CID, outbox event id),
 * so it can run any number of times, concurrently too, with one result. A process that dies after the outcome is
 * recorded leaves a checkout `processing`: any read of it (status, checkout page) and the periodic sweep run
 * `finishSettlement` again. A payment claim whose outcome has not arrived after UNANSWERED_PAYMENT_CLAIM_MS (the
 * process lost the processor's answer, or died) is settled by asking the processor what became of the charge, which
 * also closes its idempotency key: the charge's own outcome, or failed as unconfirmed with nothing charged.
 */
import { writeOutboxEvent } from '@svc/outbox'
import pRetry from 'p-retry'
import pTimeout from 'p-timeout'
import { sharedRun } from '@svc/subgraph-server'
import { isDuplicateKeyError, type CheckoutDoc, type FailureReason, type SettlementClaim } from '../models'
import { holdsOf, nowOf, resolveTimeoutOf, type PaymentsDomain } from './context'
import { buildPaymentRecord, storePaymentRecord } from './payment-records'
import type { Environment } from '@svc/vocabulary'
import type { ChargeResult, PaymentProcessor } from '../processors'

/**
 * A payment claim without an outcome after this long lost its processor's answer: the call takes at most the
 * processor timeout (20 s by default), so its process died or failed after the claim. Recovery then asks the processor. Until
 * then the checkout refuses every pay (the claim is taken): its claimant may still be on its way to the charge.
 */
export const UNANSWERED_PAYMENT_CLAIM_MS = 60 * 1000

/** The idempotency key of a checkout's charge: one per checkout, so the processor charges it at most once. */
export const chargeKeyOf = (checkoutId: string): string => `checkout:${checkoutId}`

/** The claims that close a checkout without a charge, their outcome known at the claim (the sweep applies one cut off). */
export const CLOSING_CLAIMS: ReadonlySet<string> = new Set<SettlementClaim>(['cancel', 'lock', 'refusal'])

export const FAILURE_MESSAGES = {
  expired: 'This checkout expired before it was paid. No payment was made.',
  canceled: 'The checkout was canceled. No payment was made.',
  too_many_attempts: 'Too many payment attempts were made. This checkout is closed and no payment was made.',
  not_authorized: 'The recipient no longer accepts this payment through this app. No payment was made.',
  processorUnreachable: 'The payment could not be processed. No payment was made.',
  unconfirmed: 'The payment could not be confirmed. No payment was made.',
} as const

export interface SettlementOutcome {
  ok: boolean
  chargeId?: string | null
  reason?: FailureReason | null
  code?: string | null
  message?: string | null
}

type StoredCheckout = CheckoutDoc & { _id: string }

/** Inserts the settlement claim of a checkout: true when this caller won it, false when someone else already had. */
export async function claimSettlement(
  d: PaymentsDomain,
  checkout: Pick<StoredCheckout, '_id' | 'environment' | 'appDid'>,
  by: SettlementClaim,
  extra: { processor?: string; recordTid?: string; outcome?: SettlementOutcome } = {},
): Promise<boolean> {
  const now = nowOf(d)
  try {
    await d.models.Settlement.create({
      _id: checkout._id,
      environment: checkout.environment,
      appDid: checkout.appDid,
      by,
      claimedAt: now,
      processor: extra.processor ?? null,
      recordTid: extra.recordTid ?? null,
      outcome: extra.outcome ?? null,
      settledAt: extra.outcome ? now : null,
      // a close (cancel, lock, refusal) stays awaiting until applied: one cut off before that is finished by the
      // sweep, not left pending until the checkout expires
      awaiting: !extra.outcome || CLOSING_CLAIMS.has(by),
    })
    return true
  } catch (err) {
    if (isDuplicateKeyError(err)) return false
    throw err
  }
}

/**
 * How long a payment's process keeps trying to write the outcome its processor answered (the database may be
 * restarting). Recovery may ask the processor meanwhile: it gets the same answer; the first write stands, except
 * when two writes meet (FerretDB's filtered update is not atomic: the later one's settledAt stays), which is why a
 * completed payment's time is its stored record's (finishSettlement).
 */
export const OUTCOME_WRITE_RETRY_MS = 2 * 60 * 1000

/**
 * Records what the processor answered for a payment claim. Money may have moved, so a failed write is tried again
 * (with backoff, for up to OUTCOME_WRITE_RETRY_MS) rather than left to recovery.
 */
export async function keepOutcome(d: PaymentsDomain, checkoutId: string, outcome: SettlementOutcome): Promise<void> {
  await pRetry(() => recordOutcome(d, checkoutId, outcome), {
    retries: 20,
    minTimeout: 250,
    maxTimeout: 10_000,
    maxRetryTime: d.outcomeWriteRetryMs ?? OUTCOME_WRITE_RETRY_MS,
    onFailedAttempt: (err) =>
      d.logger?.warn({ checkoutId, ok: outcome.ok, chargeId: outcome.chargeId ?? null, attempt: err.attemptNumber, err: err.message }, 'payment outcome not written yet; trying again'),
  })
}

/** A processor's answer as a settlement outcome. */
export function outcomeOf(result: ChargeResult): SettlementOutcome {
  if (result.ok) return { ok: true, chargeId: result.chargeId }
  return { ok: false, reason: result.code === 'processing_error' ? 'processor_error' : 'declined', code: result.code, message: result.message }
}

/**
 * Records the outcome of a claim that had none. Only the claim's winner, or the recovery of a claim that lost its
 * answer (both with the processor's word), writes it, so the filter on `outcome: null` is a guard, not the decision.
 * The claim stays `awaiting` until finishSettlement has applied it: a finish that fails after this write (the process
 * dying, the database away) leaves it for the sweep, not pending until the checkout expires.
 */
export async function recordOutcome(d: PaymentsDomain, checkoutId: string, outcome: SettlementOutcome): Promise<void> {
  await d.models.Settlement.updateOne({ _id: checkoutId, outcome: null }, { $set: { outcome, settledAt: nowOf(d) } })
}

/**
 * Applies a settlement's outcome to its checkout. Success: the payment record, a ticket checkout's tickets, the
 * `payment.completed` outbox event, then the checkout `completed` with its ref, in that order, so a checkout is never
 * completed without its record, tickets and event. Failure: a ticket checkout's hold released, then the checkout
 * `failed` with the reason. Idempotent; does nothing while the outcome is unknown. True when this call brought the
 * checkout to its end (false when it was already there, or the outcome is unknown).
 */
export async function finishSettlement(d: PaymentsDomain, checkoutId: string): Promise<boolean> {
  const settlement = await d.models.Settlement.findById(checkoutId).lean()
  if (!settlement?.outcome) return false
  const checkout = (await d.models.Checkout.findById(checkoutId).lean()) as StoredCheckout | null
  if (!checkout) throw new Error(`settlement ${checkoutId} has no checkout`)
  const applied = () => (settlement.awaiting ? d.models.Settlement.updateOne({ _id: checkoutId }, { $set: { awaiting: false } }) : undefined)
  if (checkout.status === 'completed' || checkout.status === 'failed') {
    await applied()
    return false
  }
  const outcome = settlement.outcome
  const settledAt = settlement.settledAt ?? settlement.claimedAt
  if (outcome.ok) {
    const built = await buildPaymentRecord(d.serviceDid, checkout, { ...settlement, settledAt })
    // the time of the record stored first, not this finish's settledAt: two recoveries whose outcome writes met (not
    // atomic on FerretDB: both match `outcome: null`, the later one's time stays) may finish with different ones, and
    // the record, the event and the checkout must all tell the one time
    const { createdAt: completedAt, ...ref } = await storePaymentRecord(d, checkout, built)
    // a ticket checkout's tickets exist before its payment is announced as completed
    if (checkout.holdId) await holdsOf(d).settle(checkout.holdId, { checkoutId, paymentUri: ref.uri })
    const eventId = await writeOutboxEvent(d.models.Outbox, {
      type: 'payment.completed',
      key: `payment.completed:${checkout._id}`,
      environment: checkout.environment as Environment,
      appDid: checkout.appDid,
      occurredAt: completedAt,
      requestId: d.requestId,
      data: {
        paymentUri: ref.uri,
        cid: ref.cid,
        appOrderId: checkout.appOrderId,
        recipientDid: checkout.recipientDid,
        paymentType: checkout.paymentType,
        amount: checkout.amount,
        currency: checkout.currency,
        buyerFee: checkout.buyerFee,
        total: checkout.total,
        // what the sale gave the platform and the app, as the payment record has them (an operator may have lowered the
        // app's share after the creator accepted it: the app's own figure is this one)
        serviceFee: checkout.serviceFee,
        appFee: checkout.appFee,
        completedAt: completedAt.toISOString(),
        ...(checkout.holdId ? { holdId: checkout.holdId } : {}),
      },
    })
    await d.models.Checkout.updateOne(
      { _id: checkoutId },
      { $set: { status: 'completed', ref, completedAt, failureReason: null, failureMessage: null } },
    )
    // the event's id leads an operator on to its delivery (the events workers' `domain event → delivery` line)
    d.logger?.info({ checkoutId, environment: checkout.environment, appDid: checkout.appDid, paymentUri: ref.uri, eventId }, 'checkout completed')
  } else {
    const reason: FailureReason = outcome.reason ?? 'processor_error'
    // a ticket checkout that failed returns its hold's capacity
    if (checkout.holdId) await holdsOf(d).settle(checkout.holdId, null)
    await d.models.Checkout.updateOne(
      { _id: checkoutId },
      { $set: { status: 'failed', failureReason: reason, failureMessage: outcome.message ?? null, failedAt: settledAt } },
    )
    d.logger?.info({ checkoutId, environment: checkout.environment, appDid: checkout.appDid, reason }, 'checkout failed')
  }
  await applied()
  return true
}

/**
 * Brings a checkout whose settlement was claimed to its end when that is possible: an outcome is applied; a payment
 * claim that lost its answer gets the processor's. True when this call brought the checkout to its end (a concurrent
 * recovery, or a request, that got there first leaves it false).
 */
export async function recoverCheckout(d: PaymentsDomain, checkoutId: string): Promise<boolean> {
  const settlement = await d.models.Settlement.findById(checkoutId, { outcome: 1, by: 1, claimedAt: 1, environment: 1 }).lean()
  if (!settlement) return false
  if (!settlement.outcome) {
    if (settlement.by !== 'payment') return false
    // a minute old is old enough, as the sweep that picks such claims counts it
    if (nowOf(d).getTime() - new Date(settlement.claimedAt).getTime() < UNANSWERED_PAYMENT_CLAIM_MS) return false
    const processorOf = () => d.processors.forEnvironment(settlement.environment as Environment)
    const outcome = await askProcessor(d, processorOf, checkoutId, { ok: false, reason: 'processor_error', code: 'unconfirmed', message: FAILURE_MESSAGES.unconfirmed })
    if (!outcome) return false
    await recordOutcome(d, checkoutId, outcome)
  }
  return finishSettlement(d, checkoutId)
}

/**
 * What became of a payment whose processor answer was lost, by the processor's word; asking closes the key, so nothing
 * is charged under it later. `noCharge` is the outcome when the processor has no charge under the key. Null when the
 * processor cannot tell now, or none is configured (the checkout stays processing; the next read or sweep asks again).
 */
export async function askProcessor(d: PaymentsDomain, processorOf: () => PaymentProcessor, checkoutId: string, noCharge: SettlementOutcome): Promise<SettlementOutcome | null> {
  try {
    const result = await pTimeout(processorOf().resolveCharge(chargeKeyOf(checkoutId)), { milliseconds: resolveTimeoutOf(d) })
    d.logger?.warn({ checkoutId, charged: result?.ok ?? false }, 'a payment that lost its answer was settled by asking its processor')
    return result ? outcomeOf(result) : noCharge
  } catch (err) {
    d.logger?.error({ checkoutId, err: (err as Error).message }, 'the processor cannot tell what became of a payment now; the checkout stays processing')
    return null
  }
}

/**
 * Expires a pending checkout past its expiresAt: claims it for expiry (`expired`), or, when it was already claimed,
 * recovers it (`recovered` when this call brought it to its end, `claimed` when its payment is still being processed
 * or another call got there first).
 */
export async function expireCheckout(
  d: PaymentsDomain,
  checkout: Pick<StoredCheckout, '_id' | 'environment' | 'appDid'>,
): Promise<'expired' | 'recovered' | 'claimed'> {
  const won = await claimSettlement(d, checkout, 'expiry', {
    outcome: { ok: false, reason: 'expired', code: 'expired', message: FAILURE_MESSAGES.expired },
  })
  if (won) {
    await finishSettlement(d, checkout._id)
    return 'expired'
  }
  return (await recoverCheckout(d, checkout._id)) ? 'recovered' : 'claimed'
}

/**
 * Finishing a processing checkout, shared in this process: concurrent reads (an app polling, the buyer's page, the
 * sweep) join the run in flight rather than each starting another (a paid hold's settle issues up to 2,000 tickets).
 */
const recoverShared = (d: PaymentsDomain, checkoutId: string): Promise<boolean> => sharedRun(d.models, `recover ${checkoutId}`, () => recoverCheckout(d, checkoutId))

/**
 * A checkout as a read should see it: a pending one past expiresAt is expired now (so polling ends without the
 * sweep), a processing one whose outcome is known is finished. Returns the checkout as stored afterwards. A finish
 * that fails (the tickets domain slow to settle a large hold, or away when an expired hold is to be released)
 * leaves it as it was for this read, which answers that rather than an error: the next read or the sweep finishes it.
 */
export async function settleOnRead<T extends Pick<StoredCheckout, '_id' | 'environment' | 'appDid' | 'status' | 'expiresAt'>>(
  d: PaymentsDomain,
  checkout: T,
  reload: () => Promise<T | null>,
): Promise<T> {
  let changed = false
  if (checkout.status === 'pending' && new Date(checkout.expiresAt).getTime() <= nowOf(d).getTime()) {
    // an expiry whose finish fails (a ticket checkout's hold not released while the tickets domain is away) leaves
    // it as it is for this read: the next read or the sweep finishes it
    changed = await expireCheckout(d, checkout).then(
      (outcome) => outcome !== 'claimed',
      (err: unknown) => {
        d.logger?.warn({ checkoutId: checkout._id, err }, 'a read could not finish the expired checkout; it answers it as it is')
        return false
      },
    )
  } else if (checkout.status === 'processing') {
    changed = await recoverShared(d, checkout._id).catch((err: unknown) => {
      d.logger?.warn({ checkoutId: checkout._id, err }, 'a read could not finish the processing checkout; it answers it processing')
      return false
    })
  }
  if (!changed) return checkout
  return (await reload()) ?? checkout
}
