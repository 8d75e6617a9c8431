import Redis from 'ioredis'
import { runProcess } from '@svc/config'
import { createDashboardSessions } from '@svc/dashboard-session'
import { createServiceAuthVerifier } from '@svc/service-auth'
import { createGatewayClient } from '@svc/gateway-client'
import { createMetrics, logConnectionErrors, REQUEST_REDIS_OPTIONS, upstreamReady } from '@svc/operations'
import { buildApiServer, buildCheckoutServer, LISTEN_BACKLOG } from './server'

runProcess('xrpc-adapter', async (config, logger) => {
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 2, ...REQUEST_REDIS_OPTIONS })
  logConnectionErrors(redis, logger, 'redis: connection error')
  // a query plan may ask two subgraphs in turn; the gateway answers a slow one 503 itself before this runs out
  const gateway = createGatewayClient({
    url: config.gatewayUrl,
    signer: { issuer: 'xrpc-adapter', key: config.secrets.callerKeys['xrpc-adapter'] },
    timeoutMs: 2 * config.subgraphTimeoutMs,
  })
  const serviceAuth = createServiceAuthVerifier({
    serviceDid: config.serviceDid,
    plcUrl: config.plcUrl,
    redis,
    replayKeyPrefix: `${config.redisPrefix}jti:`,
    allowInsecureDidWeb: config.allowInsecureDidWeb,
  })
  const dashboardSessions = createDashboardSessions({ redis, prefix: `${config.redisPrefix}dash:` })
  const deps = {
    logger,
    gateway,
    serviceAuth,
    dashboardSessions,
    checkoutUrl: config.checkoutUrl,
    redis,
    redisPrefix: config.redisPrefix,
    limits: config.limits,
    trustProxy: config.trustProxy,
    metrics: createMetrics('xrpc-adapter'),
    metricsToken: config.secrets.metricsToken,
    readiness: { gateway: upstreamReady(config.gatewayUrl, config.secrets.metricsToken) },
    serviceIdentity: { did: config.serviceDid, signingKeyHex: config.secrets.serviceSigningKey },
  }
  const api = await buildApiServer(deps)
  const checkout = await buildCheckoutServer(deps)
  await api.listen({ host: config.host, port: config.ports.api, backlog: LISTEN_BACKLOG })
  await checkout.listen({ host: config.host, port: config.ports.checkout, backlog: LISTEN_BACKLOG })
  return async () => {
    // the listeners first: requests in flight still call the gateway (and write the request log) while they drain
    await Promise.allSettled([api.close(), checkout.close()])
    await gateway.close()
    await redis.quit()
  }
})
