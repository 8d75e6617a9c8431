/** GET {checkout_url}/api/app/developer/config (permission app.config.read). */
import type { FastifyInstance } from 'fastify'
import type { GatewayClient } from '../gateway-client'
import { presentedApiKey } from '../auth/api-key'

interface DeveloperConfigData {
  developerConfig: {
    appDid: string
    environment: string
    status: string
    webhook: { configured: boolean; paused: boolean }
    modules: { payments: boolean; products: boolean; tickets: boolean }
  }
}

const OPERATION = `query DeveloperConfig($app: String, $environment: String) {
  developerConfig(app: $app, environment: $environment) {
    appDid environment status webhook { configured paused } modules { payments products tickets }
  }
}`

export async function developerConfigRoute(app: FastifyInstance, opts: { gateway: GatewayClient }) {
  app.get<{ Querystring: { app?: string; environment?: string } }>('/api/app/developer/config', async (request) => {
    const key = presentedApiKey(request.headers.authorization)
    const data = await opts.gateway.query<DeveloperConfigData>(
      OPERATION,
      { app: request.query.app || null, environment: request.query.environment || null },
      { principal: { kind: 'apiKey', keyHash: key.keyHash }, requestId: request.id, log: request.log },
    )
    return data.developerConfig
  })
}
