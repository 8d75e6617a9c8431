import type { GraphQLResolverMap } from '@apollo/subgraph'
import { ContractError } from '@svc/errors'
import type { SubgraphContext } from '@svc/subgraph-server'
import type { ServingTickets } from './domain/context'
import { getTicketAvailability } from './domain/availability'
import { claimFreeTicket } from './domain/claim-free-ticket'
import { configureTicketTiers } from './domain/configure-tiers'
import type { MutationClaimFreeTicketArgs, MutationConfigureTicketTiersArgs, QueryTicketAvailabilityArgs } from './generated/graph-types'

export interface TicketsContext extends SubgraphContext {
  domain: ServingTickets
}

/**
 * Apps call every field (through the adapter, which verified the app and any buyer's or organizer's assertion);
 * the app is the principal's, never an argument.
 */
function appDid(ctx: TicketsContext): string {
  if (ctx.principal.kind !== 'app') throw new ContractError('NotAllowed', 'this operation is for app callers')
  return ctx.principal.appDid
}

export const resolvers: GraphQLResolverMap<TicketsContext> = {
  Query: {
    ticketAvailability: (_: unknown, args: QueryTicketAvailabilityArgs, ctx: TicketsContext) =>
      getTicketAvailability(ctx.domain, appDid(ctx), args.environment ?? null, args.eventUri),
  },
  Mutation: {
    configureTicketTiers: (_: unknown, args: MutationConfigureTicketTiersArgs, ctx: TicketsContext) => configureTicketTiers(ctx.domain, appDid(ctx), args.input),
    claimFreeTicket: (_: unknown, args: MutationClaimFreeTicketArgs, ctx: TicketsContext) => claimFreeTicket(ctx.domain, appDid(ctx), args.input),
  },
}
