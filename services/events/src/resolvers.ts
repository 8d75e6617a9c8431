/**
 * The events subgraph's operations (schema.ts; docs/events.md). Who may call what:
 *
 *   deliveries, createTestDelivery, redriveDeliveries   service `xrpc-adapter`, operators
 *   ensureSigningSecret                                  service `apps` (updateAppConfig), operators
 *   delivery, rotateSigningSecret, Delivery.body         operators
 *
 * The adapter calls as `xrpc-adapter` only after the apps subgraph checked the API key (developerAccess), and always
 * names the app DID and environment that check established.
 */
import type { GraphQLResolverMap } from '@apollo/subgraph'
import { ContractError } from '@svc/errors'
import type { Principal } from '@svc/internal-context'
import type { SubgraphContext } from '@svc/subgraph-server'
import type { EventsDomain } from './domain/context'
import type {
  MutationCreateTestDeliveryArgs,
  MutationEnsureSigningSecretArgs,
  MutationRedriveDeliveriesArgs,
  MutationRotateSigningSecretArgs,
  QueryDeliveriesArgs,
  QueryDeliveryArgs,
  SigningSecretIssued as SigningSecretIssuedView,
} from './generated/graph-types'
import { parseEnvironment, SERVICE_PRINCIPALS } from '@svc/vocabulary'
import { findDelivery, listDeliveries, toDeliveryViews, type DeliveryView } from './domain/deliveries-log'
import { redriveDeliveries } from './domain/redrive'
import { ensureSigningSecret, rotateSigningSecret, DEFAULT_OVERLAP_SECONDS, type SigningSecretIssued } from './domain/signing-secrets'
import { createTestDelivery } from './domain/test-delivery'

export interface EventsContext extends SubgraphContext {
  domain: EventsDomain
}

/** the internal service allowed to act for a checked app or API key */

function adapterOrOperator(ctx: EventsContext): Principal {
  const p = ctx.principal
  if (p.kind === 'operator' || (p.kind === 'service' && p.name === SERVICE_PRINCIPALS.xrpcAdapter)) return p
  throw new ContractError('NotAllowed', 'this operation is for the XRPC adapter and operators')
}

function operatorOnly(ctx: EventsContext): Principal {
  const p = ctx.principal
  if (p.kind === 'operator') return p
  throw new ContractError('NotAllowed', 'this operation is for operators')
}

function appDidArg(value: unknown): string {
  if (typeof value !== 'string' || !value.startsWith('did:')) throw new ContractError('InvalidRequest', 'appDid must be a DID')
  return value
}

function issuedView(s: SigningSecretIssued): SigningSecretIssuedView {
  return { ...s, previousExpiresAt: s.previousExpiresAt ? s.previousExpiresAt.toISOString() : null }
}

export const resolvers: GraphQLResolverMap<EventsContext> = {
  Query: {
    deliveries: (_: unknown, args: QueryDeliveriesArgs, ctx: EventsContext) => {
      adapterOrOperator(ctx)
      return listDeliveries(ctx.domain, { appDid: appDidArg(args.appDid), environment: args.environment, status: args.status, limit: args.limit })
    },
    delivery: (_: unknown, args: QueryDeliveryArgs, ctx: EventsContext) => {
      operatorOnly(ctx)
      return findDelivery(ctx.domain.models, args.id)
    },
  },
  Mutation: {
    createTestDelivery: async (_: unknown, args: MutationCreateTestDeliveryArgs, ctx: EventsContext) => {
      adapterOrOperator(ctx)
      const doc = await createTestDelivery(ctx.domain, appDidArg(args.appDid), parseEnvironment(args.environment))
      ctx.log.info({ deliveryId: doc._id, appDid: doc.appDid, environment: doc.environment }, 'test delivery queued')
      return toDeliveryViews([doc])[0]
    },
    redriveDeliveries: (_: unknown, args: MutationRedriveDeliveriesArgs, ctx: EventsContext) => {
      adapterOrOperator(ctx)
      return redriveDeliveries({ ...ctx.domain, logger: ctx.log }, appDidArg(args.appDid), args.environment, args.input)
    },
    ensureSigningSecret: async (_: unknown, args: MutationEnsureSigningSecretArgs, ctx: EventsContext) => {
      const p = ctx.principal
      if (p.kind !== 'operator' && !(p.kind === 'service' && p.name === SERVICE_PRINCIPALS.apps)) {
        throw new ContractError('NotAllowed', 'ensureSigningSecret is for the apps domain (updateConfig) and operators')
      }
      const { models, secretKeys } = ctx.domain
      // the apps domain asks until it has recorded the secret as handed to the app: it gets the secret each time
      const reveal = p.kind === 'service'
      const issued = await ensureSigningSecret(models, secretKeys, appDidArg(args.appDid), parseEnvironment(args.environment), { reveal })
      if (issued.created) ctx.log.info({ appDid: args.appDid, environment: args.environment, generation: issued.generation }, 'signing secret created')
      return issuedView(issued)
    },
    rotateSigningSecret: async (_: unknown, args: MutationRotateSigningSecretArgs, ctx: EventsContext) => {
      const operator = operatorOnly(ctx)
      const { models, secretKeys } = ctx.domain
      const issued = await rotateSigningSecret(
        models,
        secretKeys,
        appDidArg(args.appDid),
        parseEnvironment(args.environment),
        args.overlapSeconds ?? DEFAULT_OVERLAP_SECONDS,
      )
      ctx.log.info({ appDid: args.appDid, environment: args.environment, generation: issued.generation, operator }, 'signing secret rotated')
      return issuedView(issued)
    },
  },
  Delivery: {
    __resolveReference: (ref: { id: string }, ctx: EventsContext) => {
      operatorOnly(ctx)
      return typeof ref.id === 'string' ? findDelivery(ctx.domain.models, ref.id) : null
    },
    body: (d: DeliveryView, _: unknown, ctx: EventsContext) => (ctx.principal.kind === 'operator' ? d.body : null),
  },
}
