/**
 * Every developer utility call is written to its environment's request log (apps subgraph) before the
 * response leaves, so a client that reads the log right after a call finds it. The key itself is never
 * recorded, only its display prefix.
 */
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { GatewayClient } from '../gateway-client'
import { apiKeyEnvironment } from '../auth/api-key'

const RECORD = `mutation Record($input: DeveloperRequestInput!) { recordDeveloperRequest(input: $input) }`

function keyPrefix(authorization: string | undefined): string | null {
  const m = /^Bearer\s+(svc_rk_(?:test|live)_.{6})/i.exec(authorization ?? '')
  return m?.[1] ?? null
}

/** A query value as recorded: a single non-empty string, else nothing (a repeated parameter arrives as an array). */
function oneValue(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null
}

export const requestLogPlugin = fp(async (app: FastifyInstance, opts: { gateway: GatewayClient }) => {
  app.addHook('onSend', async (request, reply, payload) => {
    if (!request.url.startsWith('/api/')) return payload
    const query = request.query as { app?: unknown; environment?: unknown }
    const environment = apiKeyEnvironment(request.headers.authorization) ?? oneValue(query.environment)
    try {
      await opts.gateway.query(
        RECORD,
        {
          input: {
            requestId: request.id,
            environment,
            appDid: oneValue(query.app),
            method: request.method,
            path: request.url.split('?')[0],
            status: reply.statusCode,
            errorCode: reply.contractError ?? null,
            keyPrefix: keyPrefix(request.headers.authorization),
            durationMs: reply.elapsedTime,
          },
        },
        { principal: { kind: 'service', name: 'xrpc-adapter' }, requestId: request.id, log: request.log },
      )
    } catch (err) {
      request.log.error({ err }, 'could not write the request log')
    }
    return payload
  })
})
