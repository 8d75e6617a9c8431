/** Where the events of an app environment go (docs/events.md, "Channels"): the channel, its URL, paused. */
import type { AppEnvironmentDoc } from '../models'
import type { Environment } from '@svc/vocabulary'
import type { AppsDomain } from './context'
import { findAppEnvironment } from './app-environment'
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

/** The event endpoint of a configured app environment (AppNotRegistered / AppEnvironmentNotConfigured otherwise). */
export async function getEventEndpoint(d: Pick<AppsDomain, 'models'>, appDid: string, environment: Environment): Promise<EventEndpointView> {
  return eventEndpointOf(await findAppEnvironment(d, appDid, environment))
}
