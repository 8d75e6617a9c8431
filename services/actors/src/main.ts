import pino from 'pino'
import { loadConfig, loggerOptions } from '@svc/config'
import { startActorsService } from './server'

async function main() {
  const config = loadConfig()
  const logger = pino(loggerOptions(config, 'actors'))
  const service = await startActorsService({
    mongoUrl: config.mongoUrl,
    contextSecret: config.secrets.internalContext,
    host: config.host,
    port: config.ports.actorsSubgraph,
    logger,
  })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void service.stop().finally(() => process.exit(0)))
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
