import type { GraphQLResolverMap } from '@apollo/subgraph'
import { ContractError } from '@svc/errors'
import type { SubgraphContext } from '@svc/subgraph-server'
import type { ServingTickets } from './domain/context'
import { getTicketAvailability } from './domain/availability'
import { claimFreeTicket } from './domain/claim-free-ticket'
import { configureTicketTiers } from './domain/configure-tiers'
import { createTicketHold } from './domain/create-hold'
import { secureHold, settleHold } from './domain/hold-payment'
import { ticketOfPage, ticketsOfHold } from './domain/buyer-tickets'
import { organizerEvent, organizerEvents, organizerTicketPage, organizerTiers, type OrganizerEventView } from './domain/organizer'
import { voidTicket } from './domain/void-ticket'
import { ticketView } from './domain/claim-free-ticket'
import { parseEnvironment, SERVICE_PRINCIPALS, type Environment } from '@svc/vocabulary'
import type {
  MutationClaimFreeTicketArgs,
  MutationConfigureTicketTiersArgs,
  MutationCreateTicketHoldArgs,
  MutationSecureTicketHoldArgs,
  MutationSettleTicketHoldArgs,
  MutationVoidTicketArgs,
  QueryHoldTicketsArgs,
  QueryTicketPageArgs,
  OrganizerEventTicketPageArgs,
  QueryOrganizerEventArgs,
  QueryTicketAvailabilityArgs,
} from './generated/graph-types'

export interface TicketsContext extends SubgraphContext {
  domain: ServingTickets
}

/**
 * Apps call every field but the hold's payment (through the adapter, which verified the app and any buyer's or
 * organizer's assertion); the app is the principal's, never an argument. Only the payments domain tells a hold
 * about its payment; only the hosted checkout pages read a paid hold's tickets for its buyer.
 */
function appDid(ctx: TicketsContext): string {
  if (ctx.principal.kind !== 'app') throw new ContractError('NotAllowed', 'this operation is for app callers')
  return ctx.principal.appDid
}

function serviceOnly(ctx: TicketsContext, name: string): void {
  const p = ctx.principal
  if (p.kind !== 'service' || p.name !== name) throw new ContractError('NotAllowed', `this operation is for the service ${name}`)
}

/** The signed-in organizer of a dashboard session, and its environment. */
function organizer(ctx: TicketsContext): { did: string; environment: Environment } {
  const p = ctx.principal
  if (p.kind !== 'dashboard') throw new ContractError('NotAllowed', 'this operation is for the dashboard')
  return { did: p.actorDid, environment: parseEnvironment(p.environment) }
}

const paymentsOnly = (ctx: TicketsContext): void => serviceOnly(ctx, SERVICE_PRINCIPALS.payments)

export const resolvers: GraphQLResolverMap<TicketsContext> = {
  Query: {
    ticketAvailability: (_: unknown, args: QueryTicketAvailabilityArgs, ctx: TicketsContext) =>
      getTicketAvailability(ctx.domain, appDid(ctx), args.environment ?? null, args.eventUri),
    organizerEvents: (_: unknown, __: unknown, ctx: TicketsContext) => {
      const o = organizer(ctx)
      return organizerEvents(ctx.domain, o.did, o.environment)
    },
    organizerEvent: (_: unknown, args: QueryOrganizerEventArgs, ctx: TicketsContext) => {
      const o = organizer(ctx)
      return organizerEvent(ctx.domain, o.did, o.environment, args.eventUri)
    },
    holdTickets: (_: unknown, args: QueryHoldTicketsArgs, ctx: TicketsContext) => {
      serviceOnly(ctx, SERVICE_PRINCIPALS.checkout)
      return ticketsOfHold(ctx.domain, args.holdId)
    },
    ticketPage: (_: unknown, args: QueryTicketPageArgs, ctx: TicketsContext) => {
      serviceOnly(ctx, SERVICE_PRINCIPALS.checkout)
      return ticketOfPage(ctx.domain, args.pageToken)
    },
  },
  Mutation: {
    configureTicketTiers: (_: unknown, args: MutationConfigureTicketTiersArgs, ctx: TicketsContext) => configureTicketTiers(ctx.domain, appDid(ctx), args.input),
    claimFreeTicket: (_: unknown, args: MutationClaimFreeTicketArgs, ctx: TicketsContext) => claimFreeTicket(ctx.domain, appDid(ctx), args.input),
    createTicketHold: (_: unknown, args: MutationCreateTicketHoldArgs, ctx: TicketsContext) => createTicketHold(ctx.domain, appDid(ctx), args.input),
    voidTicket: async (_: unknown, args: MutationVoidTicketArgs, ctx: TicketsContext) => {
      const o = organizer(ctx)
      await voidTicket(ctx.domain, o.did, o.environment, args.ticketId)
      return ticketView(ctx.domain, (await ctx.domain.models.Ticket.findById(args.ticketId).lean())!)
    },
    secureTicketHold: (_: unknown, args: MutationSecureTicketHoldArgs, ctx: TicketsContext) => {
      paymentsOnly(ctx)
      return secureHold(ctx.domain, args.holdId)
    },
    settleTicketHold: async (_: unknown, args: MutationSettleTicketHoldArgs, ctx: TicketsContext) => {
      paymentsOnly(ctx)
      return (await settleHold(ctx.domain, args.holdId, args.payment ?? null)).map((t) => ticketView(ctx.domain, t))
    },
  },
  // the event was read for its organizer (Query.organizerEvent): its pages read among its tiers only
  OrganizerEvent: {
    tiers: (event: OrganizerEventView, _: unknown, ctx: TicketsContext) => organizerTiers(ctx.domain, event),
    ticketPage: (event: OrganizerEventView, args: OrganizerEventTicketPageArgs, ctx: TicketsContext) => organizerTicketPage(ctx.domain, event, args),
  },
}
