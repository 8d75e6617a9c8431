/**
 * Where an app environment's events go, read before each attempt from the apps subgraph through the gateway
 * (`eventEndpoint`), as the internal service `events`. The events domain never reads the apps database.
 */
import { randomUUID } from 'node:crypto'
import { Pool } from 'undici'
import { REQUEST_ID_HEADER } from '@svc/internal-context'
import type { Channel } from '../models'
import { SERVICE_PRINCIPALS } from '@svc/vocabulary'

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
  close(): Promise<void>
}

const QUERY = `query EventEndpoint($appDid: ID!, $environment: String!) {
  eventEndpoint(appDid: $appDid, environment: $environment) { channel url configured paused }
}`

/** Contract errors that mean "nowhere to send": the attempt fails as not configured. */
const NOT_CONFIGURED = new Set(['AppEnvironmentNotConfigured', 'AppNotRegistered'])

const CALLER = JSON.stringify({ kind: 'service', name: SERVICE_PRINCIPALS.events })

interface GraphQLAnswer {
  data?: { eventEndpoint?: EventEndpoint | null } | null
  errors?: { message?: string; extensions?: { code?: unknown } }[]
}

export function createEndpointClient(opts: { url: string; token: string; timeoutMs?: number }): EndpointClient {
  const url = new URL(opts.url)
  const pool = new Pool(url.origin, { connections: 16, pipelining: 1 })
  const timeoutMs = opts.timeoutMs ?? 10_000
  return {
    async lookup(appDid, environment, requestId = randomUUID()) {
      let answer: GraphQLAnswer
      let status: number
      try {
        const res = await pool.request({
          path: url.pathname,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${opts.token}`,
            'svc-caller': CALLER,
            [REQUEST_ID_HEADER]: requestId,
          },
          body: JSON.stringify({ query: QUERY, variables: { appDid, environment } }),
          headersTimeout: timeoutMs,
          bodyTimeout: timeoutMs,
        })
        status = res.statusCode
        const text = await res.body.text()
        try {
          answer = JSON.parse(text) as GraphQLAnswer
        } catch {
          return { kind: 'unavailable', error: `could not read the app's event endpoint: the gateway answered HTTP ${status}` }
        }
      } catch (err) {
        const code = (err as { code?: unknown }).code
        return { kind: 'unavailable', error: `could not read the app's event endpoint: the gateway is unavailable${typeof code === 'string' ? ` (${code})` : ''}` }
      }
      const codes = (answer.errors ?? []).map((e) => e.extensions?.code)
      const notConfigured = codes.find((c): c is string => typeof c === 'string' && NOT_CONFIGURED.has(c))
      if (notConfigured) return { kind: 'not-configured', reason: notConfigured }
      const endpoint = answer.data?.eventEndpoint
      if (answer.errors?.length || !endpoint) {
        const code = codes.find((c): c is string => typeof c === 'string') ?? `HTTP ${status}`
        return { kind: 'unavailable', error: `could not read the app's event endpoint: the gateway refused the lookup (${code})` }
      }
      return { kind: 'found', endpoint: { channel: endpoint.channel === 'xrpc' ? 'xrpc' : 'webhook', url: endpoint.url, configured: endpoint.configured, paused: endpoint.paused } }
    },
    close: () => pool.close(),
  }
}
