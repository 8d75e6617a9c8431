/** Where the events of an app environment go (docs/events.md, "Channels"): the channel, its URL, paused. */
import { ContractError } from '@svc/errors'
import type { AppEnvironmentDoc } from '../models'
import type { Environment } from '@svc/vocabulary'
import type { AppsDomain } from './context'
import { findAppEnvironment, inAppEnvironmentTurn } from './app-environment'
import type { EventEndpoint as EventEndpointView } from '../generated/graph-types'

export type EventChannel = 'webhook' | 'xrpc'

export const EVENT_CHANNELS: readonly EventChannel[] = ['webhook', 'xrpc']

export function channelOf(doc: Pick<AppEnvironmentDoc, 'webhook'>): EventChannel {
  return doc.webhook?.channel === 'xrpc' ? 'xrpc' : 'webhook'
}

/** Where the events of an app environment go (the events workers read it through the gateway before each attempt). */
export type { EventEndpointView }

export function eventEndpointOf(doc: Pick<AppEnvironmentDoc, 'appDid' | 'environment' | 'webhook'>): EventEndpointView {
  const channel = channelOf(doc)
  const url = (channel === 'xrpc' ? doc.webhook?.receiverUrl : doc.webhook?.url) ?? null
  return { appDid: doc.appDid, environment: doc.environment as Environment, channel, url, configured: url !== null, paused: Boolean(doc.webhook?.paused) }
}

/** Why the events workers disable an endpoint (docs/events.md, "Endpoint health"). */
export const DISABLE_REASONS = ['gone', 'failing'] as const
export type DisableReason = (typeof DISABLE_REASONS)[number]

/**
 * The events workers disable an app environment's endpoint: paused (its deliveries are held, not failed, so
 * unpausing sends them), with the reason and time. Idempotent: an endpoint already disabled keeps its first reason.
 */
export async function disableEventEndpoint(
  d: Pick<AppsDomain, 'models' | 'logger'>,
  appDid: string,
  environment: Environment,
  reason: string,
  url: string | null = null,
): Promise<EventEndpointView> {
  if (!(DISABLE_REASONS as readonly string[]).includes(reason)) throw new ContractError('InvalidRequest', `reason must be one of ${DISABLE_REASONS.join(', ')}`)
  // decided on what the turn reads: an app's update in flight could otherwise be written back over the disable
  const updated = await inAppEnvironmentTurn(d, appDid, environment, async () => {
    const current = await findAppEnvironment(d, appDid, environment)
    if (current.webhook?.disabledReason) return { unchanged: current }
    // the app moved to another URL (or channel) since the attempts that failed: those were the old one's
    if (url !== null && eventEndpointOf(current).url !== url) return { unchanged: current }
    return {
      unchanged: null,
      disabled: await d.models.AppEnvironment.findOneAndUpdate(
        { appDid, environment },
        { $set: { 'webhook.paused': true, 'webhook.disabledReason': reason, 'webhook.disabledAt': new Date() } },
        { returnDocument: 'after', lean: true },
      ),
    }
  })
  if (updated.unchanged) return eventEndpointOf(updated.unchanged)
  if (!updated.disabled) throw new ContractError('AppEnvironmentNotConfigured', `app ${appDid} has no ${environment} configuration`)
  d.logger?.warn({ appDid, environment, reason, channel: channelOf(updated.disabled) }, 'event endpoint disabled: its deliveries are held until the app unpauses it')
  return eventEndpointOf(updated.disabled)
}

/** The event endpoint of a configured app environment (AppNotRegistered / AppEnvironmentNotConfigured otherwise). */
export async function getEventEndpoint(d: Pick<AppsDomain, 'models'>, appDid: string, environment: Environment): Promise<EventEndpointView> {
  return eventEndpointOf(await findAppEnvironment(d, appDid, environment))
}
