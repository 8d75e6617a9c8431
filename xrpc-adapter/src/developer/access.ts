/**
 * What the developer utility routes that act on events share (test-event, the delivery log, redrive): the API key
 * in the right form (presentedApiKey: 401 Unauthorized, webhook secrets included), then the apps subgraph's
 * `developerAccess` check of the key (its hash: this is how an API key authenticates), which runs the documented
 * checks in order (known key → app given → key bound to app and environment → live where refused → permission →
 * configuration exists), then the `app` / `environment` parameters given at most once. The route then calls the
 * events subgraph as the adapter itself, for the app and environment that check established, never for what the
 * caller wrote.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ContractError } from '@svc/errors'
import { presentedApiKey } from '../auth/api-key'
import type { GatewayClient } from '@svc/gateway-client'
import { graphql, type ResultOf } from '@svc/graph'
import { ADAPTER_PRINCIPAL } from '../principals'
import { recordEstablishedApp } from './request-log'

export type DeveloperPermission = 'app.config.read' | 'webhook.test.write' | 'webhook.deliveries.read' | 'webhook.deliveries.redrive'

const DEVELOPER_ACCESS = graphql(`query DeveloperAccess($app: String, $environment: String, $permission: String!, $liveAllowed: Boolean) {
  developerAccess(app: $app, environment: $environment, permission: $permission, liveAllowed: $liveAllowed) {
    appDid environment keyPrefix webhook { configured paused channel }
  }
}`)

/** The app environment, key and channel facts the apps subgraph established for the key (its SDL declares them). */
export type DeveloperAccess = ResultOf<typeof DEVELOPER_ACCESS>['developerAccess']

export type UtilityQuery = Record<string, string | string[] | undefined>

/**
 * The `app` and `environment` query parameters as the key check takes them (the first value of a repeated one; empty
 * counts as absent), and a `refuseRepeated` to call once the key has passed it: a parameter given twice is 400
 * InvalidRequest only for a caller who authenticated (an unknown key, or another app's, is 401 Unauthorized first).
 */
export function developerParams(query: UtilityQuery): { app: string | null; environment: string | null; refuseRepeated: () => void } {
  const first = (name: string) => {
    const value = query[name]
    return (Array.isArray(value) ? value[0] : value) || null
  }
  const repeated = ['app', 'environment'].find((name) => Array.isArray(query[name]))
  return {
    app: first('app'),
    environment: first('environment'),
    refuseRepeated: () => {
      if (repeated !== undefined) throw new ContractError('InvalidRequest', `${repeated} must be given once`)
    },
  }
}

/** The checks every such route starts with; the route's own errors come after. */
export async function checkDeveloperAccess(
  gateway: GatewayClient,
  request: FastifyRequest,
  permission: DeveloperPermission,
  opts: { liveAllowed: boolean },
): Promise<DeveloperAccess> {
  const key = presentedApiKey(request.headers.authorization)
  const { app, environment, refuseRepeated } = developerParams(request.query as UtilityQuery)
  const data = await gateway.query(DEVELOPER_ACCESS, { app, environment, permission, liveAllowed: opts.liveAllowed }, {
    principal: { kind: 'apiKey', keyHash: key.keyHash },
    requestId: request.id,
    log: request.log,
  })
  refuseRepeated()
  recordEstablishedApp(request, data.developerAccess.appDid)
  request.log = request.log.child({ appDid: data.developerAccess.appDid, environment: data.developerAccess.environment })
  return data.developerAccess
}

/** How a route calls the events subgraph: as the adapter (trusted to name only app environments it checked), with the request's id and logger. */
export function asAdapter(request: FastifyRequest) {
  return { principal: ADAPTER_PRINCIPAL, requestId: request.id, log: request.log }
}

/**
 * Within a route plugin (encapsulated): every body arrives as text, whatever its content type, and is parsed by the
 * route after the API-key checks, so a malformed body never tells an unauthenticated caller anything. The server's
 * body limit still applies (413 PayloadTooLarge).
 */
export function bodiesAsText(app: FastifyInstance): void {
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body))
}

/** A JSON object body (text from bodiesAsText), else InvalidRequest. */
export function jsonObjectBody(raw: unknown, example: string): Record<string, unknown> {
  const text = typeof raw === 'string' ? raw.trim() : ''
  if (text === '') throw new ContractError('InvalidRequest', `a JSON object body is required, e.g. ${example}`)
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new ContractError('InvalidRequest', `the body must be JSON, e.g. ${example}`)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ContractError('InvalidRequest', `the body must be a JSON object, e.g. ${example}`)
  }
  return value as Record<string, unknown>
}
