/**
 * POST {checkout_url}/api/webhooks/atm?app=<did>[&environment] (permission webhook.deliveries.redrive): after the
 * API-key checks, a JSON object body with exactly one of
 *   {"deliveryId": "whd_…"}                                     one delivery (failed or delivered); 404 DeliveryNotFound
 *                                                               when unknown or another app's or environment's
 *   {"status": "failed", "since"?: "<ISO>", "limit"?: 1–1000}   the failed deliveries created since, oldest first
 * and nothing else (400 InvalidRequest); a null field counts as absent. Answers `{ok: true, queued: n}`: what this call
 * put back on the queue (a delivery already queued, or claimed by a parallel redrive, is not counted).
 */
import type { FastifyInstance } from 'fastify'
import { ContractError } from '@svc/errors'
import type { GatewayClient } from '@svc/gateway-client'
import { graphql } from '@svc/graph'
import { asAdapter, bodiesAsText, checkDeveloperAccess, jsonObjectBody } from './access'
import { DELIVERIES_PATH } from './deliveries-route'

export const MAX_REDRIVE_LIMIT = 1000

export interface RedriveBody {
  deliveryId: string | null
  status: string | null
  since: string | null
  limit: number | null
}

const EXAMPLE = '{"deliveryId": "whd_…"} or {"status": "failed", "since": "2026-06-01T00:00:00Z", "limit": 100}'
const FIELDS = ['deliveryId', 'status', 'since', 'limit'] as const

const REDRIVE = graphql(`mutation Redrive($appDid: ID!, $environment: String!, $input: RedriveInput!) {
  redriveDeliveries(appDid: $appDid, environment: $environment, input: $input) { ok queued reason }
}`)

function optionalString(body: Record<string, unknown>, name: string): string | null {
  const v = body[name]
  if (v === undefined || v === null) return null
  if (typeof v !== 'string') throw new ContractError('InvalidRequest', `${name} must be a string`)
  return v
}

/** The body's shape; the events subgraph checks the rest (status only failed, since an ISO date-time). */
export function parseRedriveBody(raw: unknown): RedriveBody {
  const body = jsonObjectBody(raw, EXAMPLE)
  for (const key of Object.keys(body)) {
    if (!(FIELDS as readonly string[]).includes(key)) throw new ContractError('InvalidRequest', `${key} is not a redrive field (${FIELDS.join(', ')})`)
  }
  const out: RedriveBody = {
    deliveryId: optionalString(body, 'deliveryId'),
    status: optionalString(body, 'status'),
    since: optionalString(body, 'since'),
    limit: null,
  }
  if (body.limit !== undefined && body.limit !== null) {
    if (typeof body.limit !== 'number' || !Number.isInteger(body.limit) || body.limit < 1 || body.limit > MAX_REDRIVE_LIMIT) {
      throw new ContractError('InvalidRequest', `limit must be an integer from 1 to ${MAX_REDRIVE_LIMIT}`)
    }
    out.limit = body.limit
  }
  if ((out.deliveryId === null) === (out.status === null)) throw new ContractError('InvalidRequest', `give exactly one of deliveryId or status: ${EXAMPLE}`)
  if (out.deliveryId !== null && (out.since !== null || out.limit !== null)) {
    throw new ContractError('InvalidRequest', 'since and limit go with status, not with deliveryId')
  }
  if (out.status !== null && out.status !== 'failed') {
    throw new ContractError('InvalidRequest', 'status must be "failed": only failed deliveries are redriven in a batch')
  }
  return out
}

export async function redriveRoute(app: FastifyInstance, opts: { gateway: GatewayClient }) {
  bodiesAsText(app)
  app.post(DELIVERIES_PATH, async (request) => {
    const access = await checkDeveloperAccess(opts.gateway, request, 'webhook.deliveries.redrive', { liveAllowed: true })
    const input = parseRedriveBody(request.body)
    const data = await opts.gateway.query(
      REDRIVE,
      { appDid: access.appDid, environment: access.environment, input },
      asAdapter(request),
    )
    const { queued, reason } = data.redriveDeliveries
    return reason ? { ok: true, queued, reason } : { ok: true, queued }
  })
}
