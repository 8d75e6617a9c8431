import type { GraphQLResolverMap } from '@apollo/subgraph'
import { ContractError } from '@svc/errors'
import type { SubgraphContext } from '@svc/subgraph-server'
import type { Principal } from '@svc/internal-context'
import type { AppsModels } from './models'
import { getAppConfig, resolveAppAccess, toView, updateAppConfig, type UpdateAppConfigInput, type UpdatePolicy } from './domain/app-config'
import { getDeveloperConfig } from './domain/developer-config'
import { listRequests, recordRequest, type RequestLogInput } from './domain/request-log'

export interface AppsContext extends SubgraphContext {
  models: AppsModels
  policy: UpdatePolicy
}

type Kind = Principal['kind']
function require<K extends Kind>(ctx: AppsContext, ...kinds: K[]): Extract<Principal, { kind: K }> {
  if (!(kinds as Kind[]).includes(ctx.principal.kind)) {
    throw new ContractError('NotAllowed', `this operation is for ${kinds.join(' or ')} callers`)
  }
  return ctx.principal as Extract<Principal, { kind: K }>
}

export const resolvers: GraphQLResolverMap<AppsContext> = {
  Query: {
    appConfig: (_: unknown, args: { environment: string }, ctx: AppsContext) =>
      getAppConfig(ctx.models, require(ctx, 'app').appDid, args.environment),
    appAccess: (_: unknown, args: { environment?: string | null }, ctx: AppsContext) =>
      resolveAppAccess(ctx.models, require(ctx, 'app').appDid, args.environment),
    developerConfig: (_: unknown, args: { app?: string | null; environment?: string | null }, ctx: AppsContext) =>
      getDeveloperConfig(ctx.models, require(ctx, 'apiKey').keyHash, args.app, args.environment),
    app: async (_: unknown, args: { did: string }, ctx: AppsContext) => {
      require(ctx, 'operator')
      return ctx.models.App.findOne({ did: args.did }).lean()
    },
    requestLog: (_: unknown, args: { environment?: string | null; appDid?: string | null; limit?: number | null }, ctx: AppsContext) => {
      require(ctx, 'operator')
      return listRequests(ctx.models, args)
    },
  },
  Mutation: {
    updateAppConfig: (_: unknown, args: { input: UpdateAppConfigInput }, ctx: AppsContext) =>
      updateAppConfig(ctx.models, ctx.policy, require(ctx, 'app').appDid, args.input),
    recordDeveloperRequest: async (_: unknown, args: { input: RequestLogInput }, ctx: AppsContext) => {
      require(ctx, 'service')
      await recordRequest(ctx.models, args.input)
      return true
    },
  },
  AppAccess: {
    // Only the gateway hands out AppAccess references, from appAccess above (already checked); the key is the entity.
    __resolveReference: (ref: { appDid: string; environment: string }) => ({ appDid: ref.appDid, environment: ref.environment }),
  },
  App: {
    __resolveReference: (ref: { did: string }, ctx: AppsContext) => ctx.models.App.findOne({ did: ref.did }).lean(),
    createdAt: (app: { createdAt?: Date }) => (app.createdAt ?? new Date(0)).toISOString(),
    environments: async (app: { did: string }, _: unknown, ctx: AppsContext) => {
      require(ctx, 'operator')
      const docs = await ctx.models.AppEnvironment.find({ appDid: app.did }).sort({ environment: 1 }).lean()
      return docs.map(toView)
    },
  },
}
