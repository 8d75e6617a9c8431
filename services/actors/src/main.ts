import pino from 'pino'
import { loadConfig, loggerOptions } from '@svc/config'
import { stopOnSignals } from '@svc/subgraph-server'
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
  stopOnSignals(service.stop)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
