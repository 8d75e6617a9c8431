/**
 * Where an app environment's events go, read before each attempt from the apps subgraph through the gateway
 * (`eventEndpoint`) with the shared gateway client, as the internal service `events`. The events domain never reads
 * the apps database.
 */
import { randomUUID } from 'node:crypto'
import { ContractError } from '@svc/errors'
import { createGatewayClient, GatewayUnavailableError, type GatewayClientOptions } from '@svc/gateway-client'
import { graphql, type ResultOf } from '@svc/graph'
import type { Principal } from '@svc/internal-context'
import { SERVICE_PRINCIPALS } from '@svc/vocabulary'
import type { Channel } from '../models'

export interface EventEndpoint {
  channel: Channel
  /** the channel's URL (webhook URL or XRPC receiver origin); null when not configured */
  url: string | null
  configured: boolean
  paused: boolean
}

export type EndpointLookup =
  | { kind: 'found'; endpoint: EventEndpoint }
  /** the app or its environment has no configuration at all */
  | { kind: 'not-configured'; reason: string }
  /** the gateway could not answer: the attempt fails and is retried */
  | { kind: 'unavailable'; error: string }

export interface EndpointClient {
  lookup(appDid: string, environment: string, requestId?: string): Promise<EndpointLookup>
  /**
   * disables the endpoint (docs/events.md, "Endpoint health"): the apps domain pauses it, with the reason, unless its
   * URL is no longer `url` (the app moved; the failures were the old URL's)
   */
  /** `requestId`: the attempt's (`<deliveryId>.<number>`), so the apps domain's line names the attempt that disabled it */
  disable(appDid: string, environment: string, reason: 'gone' | 'failing', url: string, requestId?: string): Promise<void>
  close(): Promise<void>
}

const QUERY = graphql(`query EventEndpoint($appDid: ID!, $environment: String!) {
  eventEndpoint(appDid: $appDid, environment: $environment) { channel url configured paused }
}`)

const DISABLE = graphql(`mutation DisableEventEndpoint($appDid: ID!, $environment: String!, $reason: String!, $url: String) {
  disableEventEndpoint(appDid: $appDid, environment: $environment, reason: $reason, url: $url) { paused }
}`)

/** Contract errors that mean "nowhere to send": the attempt fails as not configured. */
const NOT_CONFIGURED = new Set<string>(['AppEnvironmentNotConfigured', 'AppNotRegistered'])

const CALLER: Principal = { kind: 'service', name: SERVICE_PRINCIPALS.events }

export function createEndpointClient(opts: { url: string; key: string; timeoutMs?: number; logger?: GatewayClientOptions['logger'] }): EndpointClient {
  const gateway = createGatewayClient({ url: opts.url, signer: { issuer: 'events', key: opts.key }, connections: 16, timeoutMs: opts.timeoutMs ?? 10_000, logger: opts.logger })
  return {
    async lookup(appDid, environment, requestId = randomUUID()) {
      let endpoint: ResultOf<typeof QUERY>['eventEndpoint'] | null
      try {
        ;({ eventEndpoint: endpoint } = await gateway.query(QUERY, { appDid, environment }, { principal: CALLER, requestId }))
      } catch (err) {
        if (err instanceof GatewayUnavailableError) return { kind: 'unavailable', error: `could not read the app's event endpoint: the gateway is unavailable (${err.reason})` }
        if (err instanceof ContractError && NOT_CONFIGURED.has(err.code)) return { kind: 'not-configured', reason: err.code }
        const code = err instanceof ContractError ? err.code : 'unexpected answer'
        return { kind: 'unavailable', error: `could not read the app's event endpoint: the gateway refused the lookup (${code})` }
      }
      if (!endpoint) return { kind: 'unavailable', error: "could not read the app's event endpoint: the gateway answered without one" }
      return { kind: 'found', endpoint: { channel: endpoint.channel === 'xrpc' ? 'xrpc' : 'webhook', url: endpoint.url, configured: endpoint.configured, paused: endpoint.paused } }
    },
    async disable(appDid, environment, reason, url, requestId = randomUUID()) {
      await gateway.query(DISABLE, { appDid, environment, reason, url }, { principal: CALLER, requestId })
    },
    close: () => gateway.close(),
  }
}
