/** GET {checkout_url}/api/app/developer/config (permission app.config.read). */
import type { FastifyInstance } from 'fastify'
import { ContractError } from '@svc/errors'
import type { GatewayClient } from '@svc/gateway-client'
import { graphql } from '@svc/graph'
import { presentedApiKey } from '../auth/api-key'

const OPERATION = graphql(`query DeveloperConfig($app: String, $environment: String) {
  developerConfig(app: $app, environment: $environment) {
    appDid environment status webhook { configured paused disabled { reason at } } modules { payments products tickets }
  }
}`)

/** A query parameter given at most once (a repeated one arrives as an array). */
function single(value: string | string[] | undefined, name: string): string | null {
  if (Array.isArray(value)) throw new ContractError('InvalidRequest', `${name} must be given once`)
  return value || null
}

export async function developerConfigRoute(app: FastifyInstance, opts: { gateway: GatewayClient }) {
  app.get<{ Querystring: { app?: string | string[]; environment?: string | string[] } }>('/api/app/developer/config', async (request) => {
    const key = presentedApiKey(request.headers.authorization)
    const variables = { app: single(request.query.app, 'app'), environment: single(request.query.environment, 'environment') }
    const data = await opts.gateway.query(
      OPERATION,
      variables,
      { principal: { kind: 'apiKey', keyHash: key.keyHash }, requestId: request.id, log: request.log },
    )
    return data.developerConfig
  })
}
