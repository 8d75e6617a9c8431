import type { GraphQLResolverMap } from '@apollo/subgraph'
import { ContractError } from '@svc/errors'
import type { SubgraphContext } from '@svc/subgraph-server'
import type { ActorsModels } from './models'
import { findActor, getPayoutStatus, parseEnvironment, toActorView, type Environment } from './domain/actors'

export interface ActorsContext extends SubgraphContext {
  models: ActorsModels
}

interface AppAccess {
  appDid: string
  environment: Environment
}

/**
 * The actor reads on AppAccess are for the app the access belongs to (the gateway builds the reference from the
 * apps subgraph's appAccess, which checked that app and environment), and for operators.
 */
function allow(ctx: ActorsContext, access: AppAccess): void {
  const p = ctx.principal
  if (p.kind === 'operator') return
  if (p.kind !== 'app') throw new ContractError('NotAllowed', 'this operation is for app callers')
  if (p.appDid !== access.appDid) throw new ContractError('AppUnauthorized', 'this access belongs to another app')
}

export const resolvers: GraphQLResolverMap<ActorsContext> = {
  Query: {
    actor: async (_: unknown, args: { did: string; environment: string }, ctx: ActorsContext) => {
      if (ctx.principal.kind !== 'operator') throw new ContractError('NotAllowed', 'this operation is for operator callers')
      const doc = await ctx.models.Actor.findOne({ did: args.did, environment: parseEnvironment(args.environment) }).lean()
      return doc ? toActorView(doc) : null
    },
  },
  AppAccess: {
    __resolveReference: (ref: { appDid: string; environment: string }): AppAccess => ({
      appDid: ref.appDid,
      environment: parseEnvironment(ref.environment),
    }),
    payoutStatus: (access: AppAccess, args: { actor?: string | null }, ctx: ActorsContext) => {
      allow(ctx, access)
      return getPayoutStatus(ctx.models, access.environment, args.actor)
    },
    profile: (access: AppAccess, args: { actor: string }, ctx: ActorsContext) => {
      allow(ctx, access)
      return findActor(ctx.models, access.environment, args.actor)
    },
  },
}
