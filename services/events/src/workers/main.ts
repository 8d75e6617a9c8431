/** The events workers' process (`npm run workers -w @svc/events`): consumes `domain-events` and `webhook-deliveries`. */
import { runProcess } from '@svc/config'
import { startEventWorkers } from './index'

runProcess('events-workers', async (config, logger) => {
  const workers = await startEventWorkers({
    mongoUrl: config.mongoUrl,
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix,
    logger,
    gateway: { url: config.gatewayUrl, token: config.secrets.eventsGatewayToken },
    serviceDid: config.serviceDid,
    serviceSigningKey: config.secrets.serviceSigningKey,
    secretKey: config.secrets.webhookSecretKey,
    delivery: config.delivery,
    allowLoopbackWebhooks: config.devAllowLoopbackWebhooks,
  })
  return workers.stop
})
