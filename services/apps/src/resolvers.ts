import type { GraphQLResolverMap } from '@apollo/subgraph'
import { ContractError } from '@svc/errors'
import type { SubgraphContext } from '@svc/subgraph-server'
import type { Principal } from '@svc/internal-context'
import { parseEnvironment, SERVICE_PRINCIPALS, type Environment } from '@svc/vocabulary'
import type { ServingApps } from './domain/context'
import type {
  AppAccessRecipientApprovalArgs,
  MutationAcceptRecipientApprovalArgs,
  MutationBlockRecipientApprovalArgs,
  MutationDeclineRecipientApprovalArgs,
  MutationRecordDeveloperRequestArgs,
  MutationRequestRecipientApprovalArgs,
  MutationRevokeRecipientApprovalArgs,
  MutationUnblockRecipientApprovalArgs,
  MutationUpdateAppConfigArgs,
  QueryAppAccessArgs,
  QueryAppAccessForArgs,
  QueryAppArgs,
  QueryAppConfigArgs,
  QueryDashboardApprovalArgs,
  QueryDeveloperAccessArgs,
  QueryDeveloperConfigArgs,
  QueryEventEndpointArgs,
  MutationDisableEventEndpointArgs,
  QueryRequestLogArgs,
} from './generated/graph-types'
import { resolveAppAccess } from './domain/app-access'
import { toAppConfigView } from './domain/app-config-view'
import { findAppEnvironment } from './domain/app-environment'
import { findApp, listAppEnvironments } from './domain/apps'
import { getDeveloperAccess } from './domain/developer-access'
import { getDeveloperConfig } from './domain/developer-config'
import { disableEventEndpoint, getEventEndpoint } from './domain/event-endpoint'
import { getAppConfig } from './domain/get-app-config'
import { listRequests, recordRequest } from './domain/request-log'
import { updateAppConfig } from './domain/update-app-config'
import {
  acceptApproval,
  approvalUrls,
  blockApproval,
  declineApproval,
  findAppApproval,
  findApproval,
  getDashboardApproval,
  listDashboardApprovals,
  paymentSetupOf,
  requestRecipientApproval,
  revokeApproval,
  unblockApproval,
  type DashboardActor,
  type RecipientApprovalView,
} from './domain/recipient-approvals'

export interface AppsContext extends SubgraphContext {
  domain: ServingApps
  /** per-request memo of lookups repeated across a list (an approval's app and origin) */
  memo: Map<string, Promise<unknown>>
}

type Kind = Principal['kind']
function require<K extends Kind>(ctx: AppsContext, ...kinds: K[]): Extract<Principal, { kind: K }> {
  if (!(kinds as Kind[]).includes(ctx.principal.kind)) {
    throw new ContractError('NotAllowed', `this operation is for ${kinds.join(' or ')} callers`)
  }
  return ctx.principal as Extract<Principal, { kind: K }>
}

function memo<T>(ctx: AppsContext, key: string, load: () => Promise<T>): Promise<T> {
  let hit = ctx.memo.get(key) as Promise<T> | undefined
  if (!hit) {
    hit = load()
    ctx.memo.set(key, hit)
  }
  return hit
}

/** The app environment an approval belongs to, read once per request (its origin and registered fee share). */
function approvalAppEnvironment(a: RecipientApprovalView, ctx: AppsContext) {
  return memo(ctx, `env:${a.appDid}:${a.environment}`, () => findAppEnvironment(ctx.domain, a.appDid, a.environment))
}

/** The signed-in creator (dashboard principal); apps, services and operators are NotAllowed: only the creator decides. */
function dashboardActor(ctx: AppsContext): DashboardActor {
  const p = require(ctx, 'dashboard')
  return { actorDid: p.actorDid, environment: parseEnvironment(p.environment) }
}

interface AppAccessRef {
  appDid: string
  environment: Environment
}

/** The domains that read an app's access for the app they serve (appAccessFor): payments and tickets. */
const ACCESS_READERS: readonly string[] = [SERVICE_PRINCIPALS.payments, SERVICE_PRINCIPALS.tickets]
/** Of those, the ones that read an app's approval by a recipient: payments only (a ticket sale involves none). */
const APPROVAL_READERS: readonly string[] = [SERVICE_PRINCIPALS.payments]

/**
 * AppAccess fields read for the app the access belongs to (appAccess checked it), operators, and the serving domains
 * that need the field (`readers`).
 */
function allowAccess(ctx: AppsContext, access: AppAccessRef, readers: readonly string[]): void {
  const p = ctx.principal
  if (p.kind === 'operator') return
  if (p.kind === 'service' && readers.includes(p.name)) return
  if (p.kind === 'service') throw new ContractError('NotAllowed', `the service ${p.name} does not read this field`)
  if (p.kind !== 'app') throw new ContractError('NotAllowed', 'this operation is for app callers')
  if (p.appDid !== access.appDid) throw new ContractError('AppUnauthorized', 'this access belongs to another app')
}

/** Callers who may read approval requests at all (before any is looked up: the answer never says whether one exists). */
function mayReadApprovals(ctx: AppsContext): void {
  if (!['operator', 'app', 'dashboard'].includes(ctx.principal.kind)) throw new ContractError('NotAllowed', 'this caller may not read approval requests')
}

/** Who may see an approval request: its app, its recipient (signed in, in its environment) and operators. */
function canSee(ctx: AppsContext, a: RecipientApprovalView): boolean {
  const p = ctx.principal
  if (p.kind === 'operator') return true
  if (p.kind === 'app') return p.appDid === a.appDid
  return p.kind === 'dashboard' && p.actorDid === a.recipientDid && p.environment === a.environment
}

export const resolvers: GraphQLResolverMap<AppsContext> = {
  Query: {
    appConfig: (_: unknown, args: QueryAppConfigArgs, ctx: AppsContext) =>
      getAppConfig(ctx.domain, require(ctx, 'app').appDid, args.environment),
    appAccess: (_: unknown, args: QueryAppAccessArgs, ctx: AppsContext) =>
      resolveAppAccess(ctx.domain, require(ctx, 'app').appDid, args.environment),
    appAccessFor: (_: unknown, args: QueryAppAccessForArgs, ctx: AppsContext) => {
      const p = require(ctx, 'service')
      if (!ACCESS_READERS.includes(p.name)) throw new ContractError('NotAllowed', 'appAccessFor is for the domains that serve an app')
      return resolveAppAccess(ctx.domain, args.appDid, args.environment)
    },
    developerConfig: (_: unknown, args: QueryDeveloperConfigArgs, ctx: AppsContext) =>
      getDeveloperConfig(ctx.domain, require(ctx, 'apiKey').keyHash, args.app, args.environment),
    developerAccess: (
      _: unknown,
      args: QueryDeveloperAccessArgs,
      ctx: AppsContext,
    ) => getDeveloperAccess(ctx.domain, require(ctx, 'apiKey').keyHash, args),
    eventEndpoint: async (_: unknown, args: QueryEventEndpointArgs, ctx: AppsContext) => {
      const p = require(ctx, 'service', 'operator')
      if (p.kind === 'service' && p.name !== SERVICE_PRINCIPALS.events) throw new ContractError('NotAllowed', 'eventEndpoint is for the events workers and operators')
      return getEventEndpoint(ctx.domain, args.appDid, parseEnvironment(args.environment))
    },
    app: async (_: unknown, args: QueryAppArgs, ctx: AppsContext) => {
      require(ctx, 'operator')
      return findApp(ctx.domain, args.did)
    },
    requestLog: (_: unknown, args: QueryRequestLogArgs, ctx: AppsContext) => {
      require(ctx, 'operator')
      return listRequests(ctx.domain, args)
    },
    dashboardApprovals: (_: unknown, _args: unknown, ctx: AppsContext) => listDashboardApprovals(ctx.domain, dashboardActor(ctx)),
    dashboardApproval: (_: unknown, args: QueryDashboardApprovalArgs, ctx: AppsContext) => getDashboardApproval(ctx.domain, dashboardActor(ctx), args.id),
  },
  Mutation: {
    disableEventEndpoint: (_: unknown, args: MutationDisableEventEndpointArgs, ctx: AppsContext) => {
      const p = require(ctx, 'service')
      if (p.name !== SERVICE_PRINCIPALS.events) throw new ContractError('NotAllowed', 'disableEventEndpoint is for the events workers')
      return disableEventEndpoint(ctx.domain, args.appDid, parseEnvironment(args.environment), args.reason, args.url ?? null)
    },
    requestRecipientApproval: (_: unknown, args: MutationRequestRecipientApprovalArgs, ctx: AppsContext) =>
      requestRecipientApproval(ctx.domain, require(ctx, 'app').appDid, args.input),
    acceptRecipientApproval: (_: unknown, args: MutationAcceptRecipientApprovalArgs, ctx: AppsContext) =>
      acceptApproval(ctx.domain, dashboardActor(ctx), args.id, args.termsHash),
    declineRecipientApproval: (_: unknown, args: MutationDeclineRecipientApprovalArgs, ctx: AppsContext) => declineApproval(ctx.domain, dashboardActor(ctx), args.id),
    revokeRecipientApproval: (_: unknown, args: MutationRevokeRecipientApprovalArgs, ctx: AppsContext) => revokeApproval(ctx.domain, dashboardActor(ctx), args.id),
    blockRecipientApproval: (_: unknown, args: MutationBlockRecipientApprovalArgs, ctx: AppsContext) => blockApproval(ctx.domain, dashboardActor(ctx), args.id),
    unblockRecipientApproval: (_: unknown, args: MutationUnblockRecipientApprovalArgs, ctx: AppsContext) => unblockApproval(ctx.domain, dashboardActor(ctx), args.id),
    updateAppConfig: (_: unknown, args: MutationUpdateAppConfigArgs, ctx: AppsContext) =>
      updateAppConfig(ctx.domain, require(ctx, 'app').appDid, args.input),
    recordDeveloperRequest: async (_: unknown, args: MutationRecordDeveloperRequestArgs, ctx: AppsContext) => {
      // the adapter's record of its developer routes' calls; no other service writes that log
      const p = require(ctx, 'service')
      if (p.name !== SERVICE_PRINCIPALS.xrpcAdapter) throw new ContractError('NotAllowed', 'recordDeveloperRequest is the XRPC adapter\'s')
      await recordRequest(ctx.domain, args.input)
      return true
    },
  },
  AppAccess: {
    // Only the gateway hands out AppAccess references, from appAccess above (already checked); the key is the entity,
    // taken only as strings (a representation is any JSON: an object would reach a query as an operator)
    __resolveReference: (ref: { appDid: unknown; environment: unknown }) =>
      typeof ref.appDid === 'string' && typeof ref.environment === 'string' ? { appDid: ref.appDid, environment: ref.environment } : null,
    recipientApproval: (access: AppAccessRef, args: AppAccessRecipientApprovalArgs, ctx: AppsContext) => {
      allowAccess(ctx, access, APPROVAL_READERS)
      return findAppApproval(ctx.domain, access.appDid, parseEnvironment(access.environment), args.recipientDid)
    },
    config: async (access: AppAccessRef, _: unknown, ctx: AppsContext) => {
      allowAccess(ctx, access, ACCESS_READERS)
      return toAppConfigView(await findAppEnvironment(ctx.domain, access.appDid, parseEnvironment(access.environment)))
    },
  },
  ActorProfile: {
    __resolveReference: (ref: { did: unknown; environment: unknown }) =>
      typeof ref.did === 'string' && typeof ref.environment === 'string' ? { did: ref.did, environment: ref.environment } : null,
    recipientApprovals: (actor: { did: string; environment: string }, _: unknown, ctx: AppsContext) => {
      const who: DashboardActor = { actorDid: actor.did, environment: parseEnvironment(actor.environment) }
      const p = ctx.principal
      const own = p.kind === 'dashboard' && p.actorDid === who.actorDid && p.environment === who.environment
      if (!own && p.kind !== 'operator') throw new ContractError('NotAllowed', "an actor's approval requests are for its own dashboard session and operators")
      return listDashboardApprovals(ctx.domain, who)
    },
  },
  RecipientApproval: {
    __resolveReference: async (ref: { id: unknown }, ctx: AppsContext) => {
      mayReadApprovals(ctx)
      if (typeof ref.id !== 'string') return null
      const view = await findApproval(ctx.domain, ref.id)
      return view && canSee(ctx, view) ? view : null
    },
    app: async (a: RecipientApprovalView, _: unknown, ctx: AppsContext) =>
      (await memo(ctx, `app:${a.appDid}`, () => findApp(ctx.domain, a.appDid))) ?? { did: a.appDid, name: null },
    appOrigin: async (a: RecipientApprovalView, _: unknown, ctx: AppsContext) => (await approvalAppEnvironment(a, ctx)).appUrl,
    // as payments applies it at initiation (docs/decisions.md, "The fee share applied")
    appliedFeeShareBps: async (a: RecipientApprovalView, _: unknown, ctx: AppsContext) => Math.min(a.feeShareBps, (await approvalAppEnvironment(a, ctx)).feeShareBps),
    dashboardUrl: (a: RecipientApprovalView, _: unknown, ctx: AppsContext) => approvalUrls(ctx.domain.dashboardUrl, a.id).dashboardUrl,
    onboardingUrl: (a: RecipientApprovalView, _: unknown, ctx: AppsContext) => approvalUrls(ctx.domain.dashboardUrl, a.id).onboardingUrl,
    recipient: (a: RecipientApprovalView) => ({ did: a.recipientDid, environment: a.environment }),
    paymentSetup: (a: RecipientApprovalView, _: unknown, ctx: AppsContext) => paymentSetupOf(ctx.domain, a),
  },
  App: {
    // No subgraph hands out App references today; a caller reaching _entities directly reads only its own app.
    __resolveReference: (ref: { did: unknown }, ctx: AppsContext) => {
      const p = require(ctx, 'operator', 'app')
      if (typeof ref.did !== 'string') return null
      if (p.kind === 'app' && p.appDid !== ref.did) throw new ContractError('NotAllowed', 'an app reads only its own registration')
      return findApp(ctx.domain, ref.did)
    },
    createdAt: (app: { createdAt?: Date }) => (app.createdAt ?? new Date(0)).toISOString(),
    environments: async (app: { did: string }, _: unknown, ctx: AppsContext) => {
      require(ctx, 'operator')
      return listAppEnvironments(ctx.domain, app.did)
    },
  },
}
