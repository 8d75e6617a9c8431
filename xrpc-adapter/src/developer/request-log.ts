/**
 * Every developer utility call is written to its environment's request log (apps subgraph) before the
 * response leaves, so a client that reads the log right after a call finds it. The key itself is never
 * recorded, only its display prefix.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { GatewayClient } from '@svc/gateway-client'
import { graphql } from '@svc/graph'
import { ADAPTER_PRINCIPAL } from '../principals'
import { apiKeyForLog } from '../auth/api-key'

const RECORD = graphql(`mutation Record($input: DeveloperRequestInput!) { recordDeveloperRequest(input: $input) }`)

/** A query value as recorded: a single non-empty string, else nothing (a repeated parameter arrives as an array). */
function oneValue(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null
}

/** The app a request's key check established (test-event and redrive may leave `app` out): the log's app. */
const establishedApps = new WeakMap<FastifyRequest, string>()
export const recordEstablishedApp = (request: FastifyRequest, appDid: string): void => void establishedApps.set(request, appDid)

/** Requests refused before they are calls of anyone's (past the per-address limit): not written to the log. */
const unrecorded = new WeakSet<FastifyRequest>()
export const leaveOutOfRequestLog = (request: FastifyRequest): void => void unrecorded.add(request)

/** A developer utility route (`/api/…`), by the route the router matched: the raw URL may be percent-encoded. */
export const isUtilityRoute = (request: FastifyRequest): boolean => request.routeOptions.url?.startsWith('/api/') === true

export const requestLogPlugin = fp(async (app: FastifyInstance, opts: { gateway: GatewayClient }) => {
  app.addHook('onSend', async (request, reply, payload) => {
    if (!isUtilityRoute(request) || unrecorded.has(request)) return payload
    const query = request.query as { app?: unknown; environment?: unknown }
    const key = apiKeyForLog(request.headers.authorization)
    const environment = key?.environment ?? oneValue(query.environment)
    try {
      await opts.gateway.query(
        RECORD,
        {
          input: {
            requestId: request.id,
            environment,
            appDid: establishedApps.get(request) ?? oneValue(query.app),
            method: request.method,
            // the route matched, never the raw URL: what follows a `#` or `?` (a fragment a crafted request sent) is not stored
            path: request.routeOptions.url ?? '',
            status: reply.statusCode,
            errorCode: reply.contractError ?? null,
            keyPrefix: key?.keyPrefix ?? null,
            durationMs: reply.elapsedTime,
          },
        },
        { principal: ADAPTER_PRINCIPAL, requestId: request.id, log: request.log },
      )
    } catch (err) {
      request.log.error({ err }, 'could not write the request log')
    }
    return payload
  })
})
