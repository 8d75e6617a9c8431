/** What the tickets domain functions work with. */
import type { Logger } from 'pino'
import type { TicketsModels } from '../models'
import type { AppFacts } from './app-facts'
import type { SeatMap } from './seat-map'

export interface TicketsDomain {
  models: TicketsModels
  logger?: Logger
  /** the request being served (its logs' `reqId`), written on the outbox events it causes; absent in sweeps */
  requestId?: string
  /** the clock (tests move it) */
  now?: () => Date
  /** which seats are taken, kept beside the units (seat-map.ts); absent: the units are read */
  seatMap?: SeatMap
}

export const nowOf = (d: TicketsDomain): Date => (d.now ? d.now() : new Date())

/**
 * How far apart the tickets processes' clocks may be: what one stamps (a claim's minute, a hold's expiresAt) another
 * judges by its own. The stopped-claims sweep's cursor stays this far behind; a hold-expiry job that ran early is
 * retried for at least this long.
 */
export const CLOCKS_APART_MS = 2 * 60 * 1000

/** The domain as it serves a request: with its reads of the domains whose facts it decides on (app-facts.ts). */
export interface ServingTickets extends TicketsDomain {
  facts: AppFacts
  /** the payments domain, which takes a hold's payment */
  checkouts: HoldCheckouts
  /** the checkout host: a ticket's page is `${checkoutUrl}/checkout/<page token>` */
  checkoutUrl: string
  /** releases a hold's seats at its expiresAt (the `ticket-holds` queue); absent: holds lapse on read only */
  holdExpiry?: HoldExpiryScheduler
}

export interface HoldExpiryScheduler {
  /** adds the hold's job; fails when it cannot (Redis away): the caller goes on, as reads release lapsed holds anyway */
  schedule(holdId: string, expiresAt: Date): Promise<void>
}

/** A hold's hosted checkout, in the payments domain (docs/tickets.md, "Paying a hold"). */
export interface HoldCheckouts {
  /** starts the checkout of a hold, or finds it again (it is keyed by the hold id): its browser URL and status token */
  start(input: {
    appDid: string
    environment: string
    holdId: string
    organizerDid: string
    description: string
    amount: number
    /** how many tickets: the flat ticket fee is per ticket */
    tickets: number
    currency: string
    expiresAt: Date
    returnUrl: string | null
    cancelUrl: string | null
  }): Promise<HoldCheckout>
}

/** A hold's checkout as its app gets it: where the buyer pays, and the token its status is read with. */
export interface HoldCheckout {
  url: string
  token: string
}
