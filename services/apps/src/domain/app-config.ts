/**
 * money.svc.app.getConfig / updateConfig: the app's own per-environment configuration.
 * Last write wins per app DID and environment; only app-controlled fields are writable
 * (platform-owned ticket fee rates, feeShareBps and appUrl are set by the operator).
 * Where events go (channel, webhook URL, XRPC receiver origin, paused): docs/events.md, "Channels".
 */
import { ContractError } from '@svc/errors'
import type { AppsModels, AppEnvironmentDoc } from '../models'
import { assertWebhookUrlAllowed } from '@svc/webhook-url'
import { parseEnvironment, type Environment } from '@svc/vocabulary'

export interface AppConfigView {
  appDid: string
  environment: Environment
  status: string
  appUrl: string
  feeShareBps: number
  webhook: { configured: boolean; url: string | null; paused: boolean; channel: EventChannel; receiverUrl: string | null }
  modules: { payments: boolean; products: boolean; tickets: boolean }
  ticketing: { qrPasses: boolean; walletPasses: boolean }
  ticketFee: { bps: number; flatAmount: number; flatCurrency: string; passToBuyer: boolean }
  updatedAt: string
}

export type EventChannel = 'webhook' | 'xrpc'

function channelOf(doc: Pick<AppEnvironmentDoc, 'webhook'>): EventChannel {
  return doc.webhook?.channel === 'xrpc' ? 'xrpc' : 'webhook'
}

/** Where the events of an app environment go (the events workers read it through the gateway before each attempt). */
export interface EventEndpointView {
  appDid: string
  environment: Environment
  channel: EventChannel
  /** the chosen channel's URL: the webhook URL, or the XRPC receiver's origin; null when not configured */
  url: string | null
  configured: boolean
  paused: boolean
}

export function eventEndpointOf(doc: Pick<AppEnvironmentDoc, 'appDid' | 'environment' | 'webhook'>): EventEndpointView {
  const channel = channelOf(doc)
  const url = (channel === 'xrpc' ? doc.webhook?.receiverUrl : doc.webhook?.url) ?? null
  return { appDid: doc.appDid, environment: doc.environment as Environment, channel, url, configured: url !== null, paused: Boolean(doc.webhook?.paused) }
}

export function toView(doc: AppEnvironmentDoc & { updatedAt?: Date }): AppConfigView {
  return {
    appDid: doc.appDid,
    environment: doc.environment as Environment,
    status: doc.status,
    appUrl: doc.appUrl,
    feeShareBps: doc.feeShareBps,
    webhook: {
      configured: eventEndpointOf(doc).configured,
      url: doc.webhook?.url ?? null,
      paused: Boolean(doc.webhook?.paused),
      channel: channelOf(doc),
      receiverUrl: doc.webhook?.receiverUrl ?? null,
    },
    modules: {
      payments: Boolean(doc.modules?.payments),
      products: Boolean(doc.modules?.products),
      tickets: Boolean(doc.modules?.tickets),
    },
    ticketing: { qrPasses: Boolean(doc.ticketing?.qrPasses), walletPasses: Boolean(doc.ticketing?.walletPasses) },
    ticketFee: {
      bps: doc.ticketFee?.bps ?? 0,
      flatAmount: doc.ticketFee?.flatAmount ?? 0,
      flatCurrency: doc.ticketFee?.flatCurrency ?? 'usd',
      passToBuyer: Boolean(doc.ticketFee?.passToBuyer),
    },
    updatedAt: (doc.updatedAt ?? new Date()).toISOString(),
  }
}

/** AppNotRegistered when the DID has no registration; AppEnvironmentNotConfigured when the environment has no configuration. */
export async function findAppEnvironment(models: AppsModels, appDid: string, environment: Environment) {
  const config = await models.AppEnvironment.findOne({ appDid, environment }).lean()
  if (config) return config
  // Only a miss needs to tell the two errors apart.
  if (!(await models.App.exists({ did: appDid }))) throw new ContractError('AppNotRegistered', `app ${appDid} is not registered`)
  throw new ContractError('AppEnvironmentNotConfigured', `app ${appDid} has no ${environment} configuration`)
}

export interface AppAccessView {
  appDid: string
  environment: Environment
}

/**
 * The environment an app call acts in: the one given (it must be configured for the app), or, when absent,
 * the app's only configured environment; an app configured for both must say which (InvalidRequest).
 * AppNotRegistered / AppEnvironmentNotConfigured as findAppEnvironment.
 */
export async function resolveAppAccess(models: AppsModels, appDid: string, environmentRaw: unknown): Promise<AppAccessView> {
  if (environmentRaw !== undefined && environmentRaw !== null) {
    const environment = parseEnvironment(environmentRaw)
    await findAppEnvironment(models, appDid, environment)
    return { appDid, environment }
  }
  const configured = await models.AppEnvironment.find({ appDid }, { environment: 1 }).lean()
  const environments = [...new Set(configured.map((c) => c.environment as Environment))].sort().reverse() // test, live
  const only = environments.length === 1 ? environments[0] : undefined
  if (only) return { appDid, environment: only }
  if (environments.length > 1) {
    throw new ContractError('InvalidRequest', `environment is required: this app is configured for ${environments.join(' and ')}`)
  }
  if (!(await models.App.exists({ did: appDid }))) throw new ContractError('AppNotRegistered', `app ${appDid} is not registered`)
  throw new ContractError('AppEnvironmentNotConfigured', `app ${appDid} has no configured environment`)
}

export async function getAppConfig(models: AppsModels, appDid: string, environmentRaw: unknown): Promise<AppConfigView> {
  const environment = parseEnvironment(environmentRaw)
  return toView(await findAppEnvironment(models, appDid, environment))
}

export interface UpdateAppConfigInput {
  environment: string
  modules?: { tickets?: boolean | null } | null
  ticketing?: { qrPasses?: boolean | null; walletPasses?: boolean | null } | null
  ticketFee?: { passToBuyer?: boolean | null } | null
  webhookUrl?: string | null
  appUrl?: string | null
  /** docs/events.md, "Channels": webhook (default) or xrpc */
  eventChannel?: string | null
  /** the origin of the app's XRPC service (xrpc channel); the webhookUrl policy */
  receiverUrl?: string | null
  /** true holds every delivery of the app environment; false releases them */
  webhookPaused?: boolean | null
}

export const EVENT_CHANNELS: readonly EventChannel[] = ['webhook', 'xrpc']

function parseEventChannel(value: unknown): EventChannel {
  if ((EVENT_CHANNELS as readonly unknown[]).includes(value)) return value as EventChannel
  throw new ContractError('InvalidRequest', `eventChannel must be one of ${EVENT_CHANNELS.join(', ')}`)
}

/** The XRPC receiver: the webhook URL policy, and an origin (deliveries POST to <origin>/xrpc/money.svc.event.receiveEvent). */
async function allowedReceiverOrigin(raw: string, policy: UpdatePolicy, environment: Environment): Promise<string> {
  const allowed = new URL(
    await assertWebhookUrlAllowed(raw, { environment, allowLoopbackInTest: policy.allowLoopbackWebhooksInTest, resolve: policy.resolve }),
  )
  if (allowed.pathname !== '/' || allowed.search !== '') {
    throw new ContractError(
      'WebhookUrlNotAllowed',
      "receiverUrl must be the origin of the app's XRPC service (scheme, host and optional port), without a path or query",
    )
  }
  return allowed.origin
}

export interface UpdatePolicy {
  allowLoopbackWebhooksInTest: boolean
  resolve?: (host: string) => Promise<string[]>
}

function sameUrl(a: string, b: string): boolean {
  try {
    return new URL(a).toString() === new URL(b).toString()
  } catch {
    return false
  }
}

export async function updateAppConfig(
  models: AppsModels,
  policy: UpdatePolicy,
  appDid: string,
  input: UpdateAppConfigInput,
): Promise<AppConfigView> {
  const environment = parseEnvironment(input.environment)
  const current = await findAppEnvironment(models, appDid, environment)

  const set: Record<string, unknown> = {}
  if (input.eventChannel != null) set['webhook.channel'] = parseEventChannel(input.eventChannel)
  if (input.webhookPaused != null) set['webhook.paused'] = input.webhookPaused === true
  if (input.modules?.tickets != null) set['modules.tickets'] = input.modules.tickets
  if (input.ticketing?.qrPasses != null) set['ticketing.qrPasses'] = input.ticketing.qrPasses
  if (input.ticketing?.walletPasses != null) set['ticketing.walletPasses'] = input.ticketing.walletPasses
  if (input.ticketFee?.passToBuyer != null) set['ticketFee.passToBuyer'] = input.ticketFee.passToBuyer
  if (input.appUrl != null && !sameUrl(input.appUrl, current.appUrl)) {
    throw new ContractError(
      'AppUrlNotAllowed',
      'appUrl is the registered app origin and is changed only through registration; send the registered value or omit it',
    )
  }
  if (input.webhookUrl != null) {
    set['webhook.url'] = await assertWebhookUrlAllowed(input.webhookUrl, {
      environment,
      allowLoopbackInTest: policy.allowLoopbackWebhooksInTest,
      resolve: policy.resolve,
    })
  }
  if (input.receiverUrl != null) set['webhook.receiverUrl'] = await allowedReceiverOrigin(input.receiverUrl, policy, environment)
  if (Object.keys(set).length === 0) return toView(current)
  const updated = await models.AppEnvironment.findOneAndUpdate(
    { appDid, environment },
    { $set: set },
    { returnDocument: 'after', lean: true },
  )
  if (!updated) throw new ContractError('AppEnvironmentNotConfigured', `app ${appDid} has no ${environment} configuration`)
  return toView(updated)
}
