/**
 * GET {checkout_url}/api/webhooks/atm?app=<did>[&environment][&status][&limit] (permission webhook.deliveries.read):
 * the app environment's delivery log, newest first, read-only. After the API-key checks: `status` one of pending,
 * held, delivered, failed; `limit` an integer 1–100 (default 20); anything else, or either given twice, is 400
 * InvalidRequest. Every entry has every field: a field without a value is null.
 */
import type { FastifyInstance } from 'fastify'
import { ContractError } from '@svc/errors'
import type { GatewayClient } from '@svc/gateway-client'
import { graphql } from '@svc/graph'
import { DELIVERY_STATUSES } from '@svc/vocabulary'
import { asAdapter, checkDeveloperAccess, type UtilityQuery } from './access'

export const DELIVERIES_PATH = '/api/webhooks/atm'

export const DEFAULT_LIMIT = 20
export const MAX_LIMIT = 100

const DELIVERIES = graphql(`query Deliveries($appDid: ID!, $environment: String!, $status: String, $limit: Int) {
  deliveries(appDid: $appDid, environment: $environment, status: $status, limit: $limit) {
    id eventType status attemptCount environment createdAt lastAttemptAt nextAttemptAt deliveredAt failedAt
    attempts { number run attemptedAt channel url statusCode durationMs error responseExcerpt outcome nextAttemptAt }
  }
}`)

function parseStatus(query: UtilityQuery): string | null {
  const value = query.status
  if (value === undefined) return null
  if (typeof value !== 'string' || !(DELIVERY_STATUSES as readonly string[]).includes(value)) {
    throw new ContractError('InvalidRequest', `status must be given once, one of ${DELIVERY_STATUSES.join(', ')}`)
  }
  return value
}

function parseLimit(query: UtilityQuery): number {
  const value = query.limit
  if (value === undefined) return DEFAULT_LIMIT
  const n = typeof value === 'string' && /^\d{1,4}$/.test(value) ? Number(value) : NaN
  if (!(n >= 1 && n <= MAX_LIMIT)) throw new ContractError('InvalidRequest', `limit must be given once, an integer from 1 to ${MAX_LIMIT}`)
  return n
}

export async function deliveriesRoute(app: FastifyInstance, opts: { gateway: GatewayClient }) {
  app.get(DELIVERIES_PATH, async (request) => {
    const access = await checkDeveloperAccess(opts.gateway, request, 'webhook.deliveries.read', { liveAllowed: true })
    const query = request.query as UtilityQuery
    const variables = { appDid: access.appDid, environment: access.environment, status: parseStatus(query), limit: parseLimit(query) }
    const data = await opts.gateway.query(DELIVERIES, variables, asAdapter(request))
    return { deliveries: data.deliveries }
  })
}
