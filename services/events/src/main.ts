import pino from 'pino'
import { loadConfig, loggerOptions } from '@svc/config'
import { stopOnSignals } from '@svc/subgraph-server'
import { startEventsService } from './server'

async function main() {
  const config = loadConfig()
  const logger = pino(loggerOptions(config, 'events'))
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
  stopOnSignals(service.stop)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
