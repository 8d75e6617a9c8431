/**
 * POST {checkout_url}/api/app/developer/test-event?app=<did>[&environment=test] (permission webhook.test.write, test
 * keys only): after the API-key checks (a live key is 403 LiveDeveloperActionUnsupported; a test key naming
 * environment=live is 401 Unauthorized, by the key's binding, checked first), an app
 * environment without a configured channel is 400 WebhookNotConfigured; otherwise every call creates and queues a new
 * `app.webhook.test` delivery: `{ok: true, environment, deliveryId}`. Any request body is ignored.
 */
import type { FastifyInstance } from 'fastify'
import { ContractError } from '@svc/errors'
import type { GatewayClient } from '@svc/gateway-client'
import { graphql } from '@svc/graph'
import { asAdapter, bodiesAsText, checkDeveloperAccess } from './access'

export const TEST_EVENT_PATH = '/api/app/developer/test-event'

const CREATE_TEST_DELIVERY = graphql(`mutation CreateTestDelivery($appDid: ID!, $environment: String!) {
  createTestDelivery(appDid: $appDid, environment: $environment) { id environment }
}`)

export async function testEventRoute(app: FastifyInstance, opts: { gateway: GatewayClient }) {
  bodiesAsText(app)
  app.post(TEST_EVENT_PATH, async (request) => {
    const access = await checkDeveloperAccess(opts.gateway, request, 'webhook.test.write', { liveAllowed: false })
    if (!access.webhook.configured) {
      throw new ContractError(
        'WebhookNotConfigured',
        `no webhook or receiver is configured for ${access.environment}: set webhookUrl (or eventChannel xrpc and receiverUrl) with money.svc.app.updateConfig`,
      )
    }
    const data = await opts.gateway.query(
      CREATE_TEST_DELIVERY,
      { appDid: access.appDid, environment: access.environment },
      asAdapter(request),
    )
    return { ok: true, environment: data.createTestDelivery.environment, deliveryId: data.createTestDelivery.id }
  })
}
