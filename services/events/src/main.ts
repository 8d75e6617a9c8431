/** The events subgraph's process. */
import { runProcess } from '@svc/config'
import { startEventsService } from './server'

runProcess('events', async (config, logger) => {
  const service = await startEventsService({
    mongoUrl: config.mongoUrl,
    contextSecret: config.secrets.internalContext,
    host: config.host,
    port: config.ports.eventsSubgraph,
    logger,
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix,
    secretKey: config.secrets.webhookSecretKey,
  })
  return service.stop
})
