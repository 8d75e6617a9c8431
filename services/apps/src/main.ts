import pino from 'pino'
import { loadConfig, loggerOptions } from '@svc/config'
import { stopOnSignals } from '@svc/subgraph-server'
import { startAppsService } from './server'

async function main() {
  const config = loadConfig()
  const logger = pino(loggerOptions(config, 'apps'))
  const service = await startAppsService({
    mongoUrl: config.mongoUrl,
    contextSecret: config.secrets.internalContext,
    host: config.host,
    port: config.ports.appsSubgraph,
    logger,
    allowLoopbackWebhooksInTest: config.devAllowLoopbackWebhooks,
    dashboardUrl: config.dashboardUrl,
    relay: { redisUrl: config.redisUrl, redisPrefix: config.redisPrefix },
  })
  stopOnSignals(service.stop)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
