/** The tickets subgraph's process. */
import { outboxRelaySettings, runProcess } from '@svc/config'
import { startTicketsService } from './server'

runProcess('tickets', async (config, logger) => {
  const service = await startTicketsService({
    mongoUrl: config.mongoUrl,
    callerKeys: config.secrets.callerKeys,
    gatewayUrl: config.gatewayUrl,
    checkoutUrl: config.checkoutUrl,
    host: config.host,
    port: config.ports.ticketsSubgraph,
    logger,
    metricsToken: config.secrets.metricsToken,
    databaseCommandMetrics: config.databaseCommandMetrics,
    relay: outboxRelaySettings(config),
  })
  return service.stop
})
