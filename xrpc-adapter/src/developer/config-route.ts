/** GET {checkout_url}/api/app/developer/config (permission app.config.read). */
import type { FastifyInstance } from 'fastify'
import type { GatewayClient } from '@svc/gateway-client'
import { graphql } from '@svc/graph'
import { presentedApiKey } from '../auth/api-key'
import { developerParams } from './access'

const OPERATION = graphql(`query DeveloperConfig($app: String, $environment: String) {
  developerConfig(app: $app, environment: $environment) {
    appDid environment status webhook { configured paused disabled { reason at } } modules { payments products tickets }
  }
}`)

export async function developerConfigRoute(app: FastifyInstance, opts: { gateway: GatewayClient }) {
  app.get<{ Querystring: { app?: string | string[]; environment?: string | string[] } }>('/api/app/developer/config', async (request) => {
    const key = presentedApiKey(request.headers.authorization)
    const { app, environment, refuseRepeated } = developerParams(request.query)
    const data = await opts.gateway.query(
      OPERATION,
      { app, environment },
      { principal: { kind: 'apiKey', keyHash: key.keyHash }, requestId: request.id, log: request.log },
    )
    refuseRepeated()
    return data.developerConfig
  })
}
