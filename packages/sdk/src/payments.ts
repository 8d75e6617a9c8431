/**
 * The contract's payment rules as helpers: poll network.svc.payment.status with backoff until a terminal status,
 * and initiate a checkout with the retry rule (same product, same app order id, after a transient failure).
 */
import { encodeProduct, InvalidProductError, type CheckoutProduct } from '@svc/checkout-product'
import { MAX_TIMER_MS, type SvcClient } from './client'
import { PollTimeoutError, SvcError, isTransientError } from './errors'
import type { Methods } from '@svc/lexicons/types'

export type PaymentStatusOutput = Methods['network.svc.payment.status']['output']
export type InitiateOutput = Methods['network.svc.payment.initiate']['output']

/** Payment states at which polling stops (the contract: completed and failed are terminal). */
export const TERMINAL_PAYMENT_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed'])

export interface BackoffOptions {
  /** First delay in ms (default 1000 for polling, 500 for initiate retries). */
  initialDelayMs?: number
  /** Largest delay in ms before jitter (default 30 000). A longer Retry-After is still honoured. */
  maxDelayMs?: number
  /** Growth per step (default 2). */
  factor?: number
  /** Relative jitter: each delay is multiplied by a random factor in [1 - jitter, 1 + jitter] (default 0.2). */
  jitter?: number
  /** Aborts the waiting and the request in flight; the abort reason is thrown. */
  signal?: AbortSignal
}

/**
 * Validates the fields and returns the `svc.checkout.v1:` product string; throws InvalidProductError. `environment`
 * ('test' | 'live') is optional: without it the app's only configured environment applies, so an app configured for
 * both must name it (initiate answers InvalidProduct otherwise). Only `tip` and `shop` checkouts are initiated by
 * apps: a ticket's checkout comes from tickets.svc.createTicketHold, and subscriptions are not available yet, so
 * both are refused here rather than by initiate.
 */
export function buildProduct(fields: CheckoutProduct): string {
  if (fields.paymentType === 'ticket') throw new InvalidProductError('InvalidFields', 'ticket checkouts come from tickets.svc.createTicketHold (its checkout.url), not from initiate')
  if (fields.paymentType === 'subscription') throw new InvalidProductError('InvalidFields', 'subscription checkouts are not available yet')
  return encodeProduct(fields)
}

/** The longest delay a timer takes (2^31 - 1 ms, about 24.8 days). */

/** Waits `ms` (at most MAX_TIMER_MS), or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal!.reason)
    }
    // a longer delay would overflow the timer, which Node then fires at once (a huge Retry-After: a tight loop)
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, Math.min(Math.max(0, ms), MAX_TIMER_MS))
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}

function backoff(options: BackoffOptions, defaultInitial: number) {
  const initial = options.initialDelayMs ?? defaultInitial
  const max = options.maxDelayMs ?? 30_000
  const factor = options.factor ?? 2
  const jitter = options.jitter ?? 0.2
  if (!(initial >= 0) || !(max >= 0) || !(factor >= 1) || !(jitter >= 0 && jitter <= 1)) {
    throw new RangeError('backoff needs initialDelayMs >= 0, maxDelayMs >= 0, factor >= 1, 0 <= jitter <= 1')
  }
  let step = 0
  return {
    /** The next delay: exponential, capped, jittered; at least `floorMs` (a Retry-After). */
    next(floorMs = 0): number {
      const base = Math.min(initial * factor ** step, max)
      step++
      const jittered = base * (1 + jitter * (2 * Math.random() - 1))
      return Math.max(Math.round(jittered), floorMs)
    },
  }
}

export interface PollPaymentStatusOptions extends BackoffOptions {
  /** Give up after this many ms with PollTimeoutError (default: no limit; pass a signal or a timeout in workers). */
  timeoutMs?: number
  /** Each status request waits at most this long, or the time left of `timeoutMs` when less (default: the client's requestTimeoutMs). */
  requestTimeoutMs?: number
  /** Called with every non-terminal status read (e.g. to record progress). */
  onStatus?: (status: PaymentStatusOutput) => void
}

/**
 * Polls network.svc.payment.status until `completed` or `failed` and returns that final answer ({status, ref?}).
 * The first read is immediate; then exponential backoff with jitter. Transient failures (no response, 429
 * honouring Retry-After, 5xx other than 501) are retried on the same schedule; contract errors (MissingToken,
 * InvalidToken, NotFound, AppUnauthorized, any other 4xx, 501) are thrown at once as SvcError.
 */
export async function pollPaymentStatus(client: Pick<SvcClient, 'getPaymentStatus'>, token: string, options: PollPaymentStatusOptions = {}): Promise<PaymentStatusOutput> {
  const { signal, timeoutMs, onStatus, requestTimeoutMs } = options
  // a timer takes at most MAX_TIMER_MS: a longer one would fire at once (a poll of 30 days ending after 1 ms)
  if (timeoutMs !== undefined && !(timeoutMs >= 1 && timeoutMs <= MAX_TIMER_MS)) throw new RangeError(`timeoutMs must be from 1 to ${MAX_TIMER_MS} ms (about 24.8 days)`)
  if (requestTimeoutMs !== undefined && !(requestTimeoutMs >= 1 && requestTimeoutMs <= MAX_TIMER_MS)) throw new RangeError(`requestTimeoutMs must be from 1 to ${MAX_TIMER_MS} ms`)
  const delays = backoff(options, 1000)
  const deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs
  let attempts = 0
  let lastStatus: string | undefined
  for (;;) {
    if (signal?.aborted) throw signal.reason
    // a wait's timer may fire late (a busy event loop): no request is started once the poll's time is up
    if (deadline !== undefined && Date.now() >= deadline) throw new PollTimeoutError(lastStatus, attempts, timeoutMs!)
    let floor = 0
    // a request still waiting when the poll's time is up ends with it; otherwise its own timeout (the client's, unless
    // requestTimeoutMs is given) applies
    const pollEnds = deadline === undefined ? undefined : AbortSignal.timeout(Math.max(1, deadline - Date.now()))
    const signals = [signal, pollEnds].filter((s): s is AbortSignal => s !== undefined)
    try {
      attempts++
      const res = await client.getPaymentStatus({ token }, { signal: signals.length ? AbortSignal.any(signals) : undefined, timeoutMs: requestTimeoutMs })
      lastStatus = res.status
      if (TERMINAL_PAYMENT_STATUSES.has(res.status)) return res
      onStatus?.(res)
    } catch (err) {
      if (pollEnds?.aborted && !signal?.aborted) throw new PollTimeoutError(lastStatus, attempts, timeoutMs!)
      if (!isTransientError(err)) throw err
      floor = (err as SvcError).retryAfterMs ?? 0
    }
    const wait = delays.next(floor)
    if (deadline !== undefined && Date.now() + wait >= deadline) {
      await sleep(deadline - Date.now(), signal)
      throw new PollTimeoutError(lastStatus, attempts, timeoutMs!)
    }
    await sleep(wait, signal)
  }
}

export interface InitiateCheckoutOptions extends BackoffOptions {
  /** Retries after the first attempt (default 3): at most retries + 1 requests. */
  retries?: number
  /**
   * No retry starts after this many ms from the call (default 60 000): a wait that would pass it (a Retry-After of
   * minutes, say) is not taken, and the last transient error is thrown instead; each request still waits at most the
   * client's request timeout. The call runs inside the buyer's request; the app retries later with the same product
   * (and so the same app order id).
   */
  timeoutMs?: number
}

const DEFAULT_INITIATE_TIMEOUT_MS = 60_000

/**
 * network.svc.payment.initiate with the contract's retry rule. The product (a string, or fields encoded here once)
 * is sent unchanged on every attempt, so the app order id stays the same: initiate is idempotent by app order id,
 * and a retry after a lost response returns the existing attempt instead of creating a second one (that retry is
 * the reconciliation). Transient failures are retried with backoff; contract errors (InvalidProduct,
 * RecipientNotPayable, AppUnauthorized, any 4xx, 501) are thrown at once. Persist the returned `token` before
 * redirecting the browser to `url`.
 */
export async function initiateCheckout(
  client: Pick<SvcClient, 'initiatePayment'>,
  product: string | CheckoutProduct,
  options: InitiateCheckoutOptions = {},
): Promise<InitiateOutput> {
  const retries = options.retries ?? 3
  if (!Number.isInteger(retries) || retries < 0) throw new RangeError('retries must be a non-negative integer')
  const timeoutMs = options.timeoutMs ?? DEFAULT_INITIATE_TIMEOUT_MS
  if (!(timeoutMs >= 1 && timeoutMs <= MAX_TIMER_MS)) throw new RangeError(`timeoutMs must be from 1 to ${MAX_TIMER_MS} ms`)
  const productString = typeof product === 'string' ? product : buildProduct(product)
  const delays = backoff(options, 500)
  const deadline = Date.now() + timeoutMs
  for (let attempt = 0; ; attempt++) {
    if (options.signal?.aborted) throw options.signal.reason
    // a request still out when timeoutMs is up ends with it (the client's own request timeout may be longer)
    const callEnds = AbortSignal.timeout(Math.max(1, deadline - Date.now()))
    try {
      return await client.initiatePayment({ product: productString }, { signal: options.signal ? AbortSignal.any([options.signal, callEnds]) : callEnds })
    } catch (err) {
      if (callEnds.aborted && !options.signal?.aborted) {
        throw new SvcError({ status: 0, error: 'Timeout', message: `network.svc.payment.initiate: no answer within initiateCheckout's timeoutMs (${timeoutMs} ms)`, nsid: 'network.svc.payment.initiate', cause: err })
      }
      if (!isTransientError(err) || attempt >= retries) throw err
      const wait = delays.next((err as SvcError).retryAfterMs ?? 0)
      if (Date.now() + wait >= deadline) throw err
      await sleep(wait, options.signal)
    }
  }
}
