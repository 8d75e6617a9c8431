/**
 * money.svc.app.updateConfig: the app changes its own configuration of one environment.
 * Last write wins per app DID and environment; only app-controlled fields are writable
 * (platform-owned ticket fee rates, feeShareBps and appUrl are set by the operator).
 * Where events go (channel, webhook URL, XRPC receiver origin, paused): docs/events.md, "Channels".
 */
import { ContractError } from '@svc/errors'
import { assertWebhookUrlAllowed } from '@svc/webhook-url'
import { parseEnvironment, type Environment } from '@svc/vocabulary'
import type { ServingApps, UpdatePolicy } from './context'
import { findAppEnvironment, inAppEnvironmentTurn } from './app-environment'
import { toAppConfigView, type AppConfigView } from './app-config-view'
import { EVENT_CHANNELS, type EventChannel } from './event-endpoint'
import { ensureSigningSecretOf } from './signing-secrets'
import type { AppConfigUpdate, UpdateAppConfigInput } from '../generated/graph-types'


export type { UpdateAppConfigInput }

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

function sameUrl(a: string, b: string): boolean {
  try {
    return new URL(a).toString() === new URL(b).toString()
  } catch {
    return false
  }
}

export type { AppConfigUpdate }

/**
 * Saves the update (last write wins), then, when the result leaves a channel configured, returns this environment's
 * signing secret (made when there is none, signing-secrets.ts) if the app has not been given it yet, or if the update
 * names the channel or its URL: a retry of the update that configured the channel, whose answer was lost, must get the
 * secret again (the contract: safe to retry with the same desired configuration). Other updates answer without it.
 */
export async function updateAppConfig(
  d: Pick<ServingApps, 'models' | 'policy' | 'signingSecrets' | 'logger'>,
  appDid: string,
  input: UpdateAppConfigInput,
): Promise<AppConfigUpdate> {
  const saved = await saveAppConfig(d, appDid, input)
  // the channel too: `{eventChannel: 'xrpc'}` configures a receiver whose URL an earlier update set
  const namesChannel = input.webhookUrl != null || input.receiverUrl != null || input.eventChannel != null
  const needsSecret = saved.view.webhook.configured && (!saved.signingSecretEnsured || namesChannel)
  const signingSecret = needsSecret ? await ensureSigningSecretOf(d, appDid, parseEnvironment(saved.view.environment)) : null
  return { config: saved.view, signingSecret }
}

async function saveAppConfig(
  d: Pick<ServingApps, 'models' | 'policy' | 'logger'>,
  appDid: string,
  input: UpdateAppConfigInput,
): Promise<{ view: AppConfigView; signingSecretEnsured: boolean }> {
  const { models, policy } = d
  const environment = parseEnvironment(input.environment)
  const current = await findAppEnvironment(d, appDid, environment)

  const set: Record<string, unknown> = {}
  if (input.eventChannel != null) set['webhook.channel'] = parseEventChannel(input.eventChannel)
  if (input.webhookPaused != null) set['webhook.paused'] = input.webhookPaused === true
  // unpausing re-enables an endpoint the events workers disabled (its held deliveries are then sent)
  if (input.webhookPaused === false) Object.assign(set, { 'webhook.disabledReason': null, 'webhook.disabledAt': null })
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
  if (input.removeWebhookUrl === true) {
    if (input.webhookUrl != null) throw new ContractError('InvalidRequest', 'send either webhookUrl or removeWebhookUrl, not both')
    set['webhook.url'] = null
  }
  if (input.webhookUrl != null) {
    set['webhook.url'] = await assertWebhookUrlAllowed(input.webhookUrl, {
      environment,
      allowLoopbackInTest: policy.allowLoopbackWebhooksInTest,
      resolve: policy.resolve,
    })
  }
  if (input.receiverUrl != null) set['webhook.receiverUrl'] = await allowedReceiverOrigin(input.receiverUrl, policy, environment)
  const ensured = (doc: { webhook?: { signingSecretEnsured?: boolean | null } | null }) => Boolean(doc.webhook?.signingSecretEnsured)
  if (Object.keys(set).length === 0) return { view: toAppConfigView(current), signingSecretEnsured: ensured(current) }
  const updated = await inAppEnvironmentTurn(d, appDid, environment, () =>
    models.AppEnvironment.findOneAndUpdate({ appDid, environment }, { $set: set }, { returnDocument: 'after', lean: true }),
  )
  if (!updated) throw new ContractError('AppEnvironmentNotConfigured', `app ${appDid} has no ${environment} configuration`)
  return { view: toAppConfigView(updated), signingSecretEnsured: ensured(updated) }
}
