/** What the tickets domain functions work with. */
import type { Logger } from 'pino'
import type { TicketsModels } from '../models'
import type { AppFacts } from './app-facts'

export interface TicketsDomain {
  models: TicketsModels
  logger?: Logger
  /** the clock (tests move it) */
  now?: () => Date
}

export const nowOf = (d: TicketsDomain): Date => (d.now ? d.now() : new Date())

/** The domain as it serves a request: with its reads of the domains whose facts it decides on (app-facts.ts). */
export interface ServingTickets extends TicketsDomain {
  facts: AppFacts
}
