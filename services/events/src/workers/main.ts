/** The events workers' process (`npm run workers -w @svc/events`): consumes `domain-events` and `webhook-deliveries`. */
import { runProcess } from '@svc/config'
import { startEventWorkers } from './index'

runProcess('events-workers', async (config, logger) => {
  const workers = await startEventWorkers({
    mongoUrl: config.mongoUrl,
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix,
    logger,
    gateway: { url: config.gatewayUrl, key: config.secrets.callerKeys.events },
    serviceDid: config.serviceDid,
    serviceSigningKey: config.secrets.serviceSigningKey,
    secretKey: config.secrets.webhookSecretKey,
    delivery: config.delivery,
    allowLoopbackWebhooks: config.devAllowLoopbackWebhooks,
  })
  return workers.stop
})
