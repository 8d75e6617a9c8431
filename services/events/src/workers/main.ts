/** The events workers' process (`npm run workers -w @svc/events`): consumes `domain-events` and `webhook-deliveries`. */
import pino from 'pino'
import { loadConfig, loggerOptions } from '@svc/config'
import { stopOnSignals } from '@svc/subgraph-server'
import { startEventWorkers } from './index'

async function main() {
  const config = loadConfig()
  const logger = pino(loggerOptions(config, 'events-workers'))
  const workers = await startEventWorkers({
    mongoUrl: config.mongoUrl,
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix,
    logger,
    gateway: { url: config.gatewayUrl, token: config.secrets.adapterGatewayToken },
    serviceDid: config.serviceDid,
    serviceSigningKey: config.secrets.serviceSigningKey,
    secretKey: config.secrets.webhookSecretKey,
    delivery: config.delivery,
    allowLoopbackWebhooks: config.devAllowLoopbackWebhooks,
  })
  stopOnSignals(workers.stop)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
