import pino from 'pino'
import { loadConfig, loggerOptions } from '@svc/config'
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
  })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void service.stop().finally(() => process.exit(0)))
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
