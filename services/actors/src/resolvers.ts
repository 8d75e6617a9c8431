import type { GraphQLResolverMap } from '@apollo/subgraph'
import { ContractError } from '@svc/errors'
import type { SubgraphContext } from '@svc/subgraph-server'
import type { Principal } from '@svc/internal-context'
import { parseEnvironment, SERVICE_PRINCIPALS, type Environment } from '@svc/vocabulary'
import type { ActorsDomain } from './domain/context'
import { findActor, getPayoutStatus, lookupActor } from './domain/queries'
import { completeTestPayoutOnboarding } from './domain/test-payout-onboarding'
import type { AppAccessPayoutStatusArgs, AppAccessProfileArgs, QueryActorArgs } from './generated/graph-types'

export interface ActorsContext extends SubgraphContext {
  domain: ActorsDomain
}

interface AppAccess {
  appDid: string
  environment: Environment
}

/** The domains that read actors for the app they serve: payments (checkouts, links) and apps (approvals). */
const ACTOR_READERS: readonly string[] = [SERVICE_PRINCIPALS.payments, SERVICE_PRINCIPALS.apps]
const isActorReader = (p: Principal) => p.kind === 'service' && ACTOR_READERS.includes(p.name)

/**
 * The actor reads on AppAccess are for the app the access belongs to (the gateway builds the reference from the
 * apps subgraph's appAccess, which checked that app and environment), the domains serving it, and operators.
 */
function allow(ctx: ActorsContext, access: AppAccess): void {
  const p = ctx.principal
  if (p.kind === 'operator' || isActorReader(p)) return
  if (p.kind !== 'app') throw new ContractError('NotAllowed', 'this operation is for app callers')
  if (p.appDid !== access.appDid) throw new ContractError('AppUnauthorized', 'this access belongs to another app')
}

type DashboardPrincipal = Extract<Principal, { kind: 'dashboard' }>

/** The signed-in creator of a dashboard session; any other caller (an app's identity included) is NotAllowed. */
function dashboard(ctx: ActorsContext): DashboardPrincipal {
  if (ctx.principal.kind !== 'dashboard') throw new ContractError('NotAllowed', 'this operation is for a creator signed in to the dashboard')
  return ctx.principal
}

/**
 * ActorProfile references are handed out by other subgraphs (apps: an approval's recipient). Apps and operators
 * may read actors (apps read any actor of an environment through AppAccess.profile anyway); a dashboard session
 * only its own creator (the recipient of its approvals); nobody else.
 */
function allowReference(ctx: ActorsContext, did: string, environment: Environment): void {
  const p = ctx.principal
  if (p.kind === 'app' || p.kind === 'operator' || isActorReader(p)) return
  if (p.kind === 'dashboard' && p.environment === environment && p.actorDid === did) return
  throw new ContractError('NotAllowed', 'this caller may not read actors')
}

export const resolvers: GraphQLResolverMap<ActorsContext> = {
  Query: {
    actor: (_: unknown, args: QueryActorArgs, ctx: ActorsContext) => {
      if (ctx.principal.kind !== 'operator' && !isActorReader(ctx.principal)) {
        throw new ContractError('NotAllowed', 'this operation is for operators and the domains that read actors')
      }
      return lookupActor(ctx.domain, args.did, parseEnvironment(args.environment))
    },
    dashboardActor: (_: unknown, _args: unknown, ctx: ActorsContext) => {
      const p = dashboard(ctx)
      return lookupActor(ctx.domain, p.actorDid, parseEnvironment(p.environment))
    },
  },
  Mutation: {
    completeTestPayoutOnboarding: (_: unknown, _args: unknown, ctx: ActorsContext) => {
      const p = dashboard(ctx)
      return completeTestPayoutOnboarding(ctx.domain, p.actorDid, parseEnvironment(p.environment))
    },
  },
  ActorProfile: {
    __resolveReference: async (ref: { did: unknown; environment: string }, ctx: ActorsContext) => {
      if (ref.environment !== 'test' && ref.environment !== 'live') return null
      if (typeof ref.did !== 'string') return null
      allowReference(ctx, ref.did, ref.environment)
      return lookupActor(ctx.domain, ref.did, ref.environment)
    },
  },
  AppAccess: {
    __resolveReference: (ref: { appDid: unknown; environment: unknown }): AppAccess | null =>
      typeof ref.appDid === 'string' && typeof ref.environment === 'string' ? { appDid: ref.appDid, environment: parseEnvironment(ref.environment) } : null,
    payoutStatus: (access: AppAccess, args: AppAccessPayoutStatusArgs, ctx: ActorsContext) => {
      allow(ctx, access)
      return getPayoutStatus(ctx.domain, access.environment, args.actor)
    },
    profile: (access: AppAccess, args: AppAccessProfileArgs, ctx: ActorsContext) => {
      allow(ctx, access)
      return findActor(ctx.domain, access.environment, args.actor)
    },
  },
}
