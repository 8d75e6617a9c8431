/** What the payments domain functions work with: the models, the processors and the service's settings. */
import type { Logger } from 'pino'
import type { PaymentsModels } from '../models'
import type { ProcessorRegistry } from '../processors'
import type { AppFacts } from './app-facts'

export interface PaymentsDomain {
  models: PaymentsModels
  processors: ProcessorRegistry
  /** the service's DID: payment record AT-URIs are `at://<serviceDid>/money.svc.payment.record/<tid>` */
  serviceDid: string
  /** the checkout host: browser URLs are `${checkoutUrl}/checkout/<browser token>` */
  checkoutUrl: string
  /** derives the status and browser tokens (HMAC-SHA256) */
  tokenSecret: string
  /**
   * PAYMENT_TOKEN_SECRET_PREVIOUS during a rotation: a repeated initiate of a checkout started under it derives the
   * same tokens again (docs/decisions.md, "Rotating the payment token secret")
   */
  previousTokenSecret?: string | null
  /** an abandoned checkout fails as `expired` this long after initiation */
  checkoutExpirySeconds: number
  logger?: Logger
  /** the request being served (its logs' `reqId`), written on the outbox events it causes; absent in sweeps */
  requestId?: string
  /** the clock (tests move it) */
  now?: () => Date
  /** how long a processor call may take before the payment fails with processor_error (default 20 s) */
  processorTimeoutMs?: number
  /** how long a payment keeps trying to write its processor's answer (default OUTCOME_WRITE_RETRY_MS, 2 min) */
  outcomeWriteRetryMs?: number
  /** the tickets domain's holds, which a ticket checkout secures before its charge and settles at its end */
  holds?: TicketHolds
}

/** What a ticket checkout asks of the tickets domain (docs/tickets.md, "Paying a hold"); both are idempotent. */
export interface TicketHolds {
  /** keeps the hold's seats for the payment about to be charged; false when the hold lapsed (nothing may be charged) */
  secure(holdId: string): Promise<boolean>
  /** the checkout ended: paid issues the hold's tickets, null returns its capacity */
  settle(holdId: string, payment: { checkoutId: string; paymentUri: string } | null): Promise<void>
}

export function holdsOf(d: PaymentsDomain): TicketHolds {
  if (!d.holds) throw new Error('a ticket checkout needs the tickets domain (PaymentsDomain.holds)')
  return d.holds
}

export const nowOf = (d: PaymentsDomain): Date => (d.now ? d.now() : new Date())

/**
 * how long a processor call may take (processorTimeoutMs, default 20 s): with the question that follows a timeout
 * (5 s), within the gateway's default wait for a subgraph (SUBGRAPH_TIMEOUT_MS, 30 s), so the buyer's page learns
 * the outcome
 */
export const processorTimeoutOf = (d: PaymentsDomain): number => d.processorTimeoutMs ?? 20_000

/**
 * how long asking a processor what became of a charge may take: a lookup, and a status read may be the one asking,
 * so an unanswering processor costs the read 5 s at most (the checkout stays processing; the next read asks again)
 */
export const resolveTimeoutOf = (d: PaymentsDomain): number => Math.min(processorTimeoutOf(d), 5_000)


/** The domain as it serves a request: with its reads of the domains whose facts it decides on (app-facts.ts). */
export interface ServingPayments extends PaymentsDomain {
  facts: AppFacts
}
