import pino from 'pino'
import { loadConfig, loggerOptions } from '@svc/config'
import { stopOnSignals } from '@svc/subgraph-server'
import { startPaymentsService } from './server'

async function main() {
  const config = loadConfig()
  const logger = pino(loggerOptions(config, 'payments'))
  const service = await startPaymentsService({
    mongoUrl: config.mongoUrl,
    contextSecret: config.secrets.internalContext,
    host: config.host,
    port: config.ports.paymentsSubgraph,
    logger,
    serviceDid: config.serviceDid,
    checkoutUrl: config.checkoutUrl,
    tokenSecret: config.secrets.paymentTokens,
    checkoutExpirySeconds: config.checkoutExpirySeconds,
    liveProcessor: config.liveProcessor,
    relay: { redisUrl: config.redisUrl, redisPrefix: config.redisPrefix },
  })
  stopOnSignals(service.stop)
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
