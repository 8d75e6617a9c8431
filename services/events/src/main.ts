/** The events subgraph's process. */
import { runProcess } from '@svc/config'
import { startEventsService } from './server'

runProcess('events', async (config, logger) => {
  const service = await startEventsService({
    mongoUrl: config.mongoUrl,
    callerKeys: config.secrets.callerKeys,
    host: config.host,
    port: config.ports.eventsSubgraph,
    logger,
    metricsToken: config.secrets.metricsToken,
    databaseCommandMetrics: config.databaseCommandMetrics,
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix,
    secretKey: config.secrets.webhookSecretKey,
    previousSecretKey: config.secrets.previousWebhookSecretKey,
  })
  return service.stop
})
