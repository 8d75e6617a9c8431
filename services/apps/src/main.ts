/** The apps subgraph's process: the subgraph and its outbox relay. */
import { outboxRelaySettings, runProcess } from '@svc/config'
import { startAppsService } from './server'

runProcess('apps', async (config, logger) => {
  const service = await startAppsService({
    mongoUrl: config.mongoUrl,
    callerKeys: config.secrets.callerKeys,
    gatewayUrl: config.gatewayUrl,
    host: config.host,
    port: config.ports.appsSubgraph,
    logger,
    metricsToken: config.secrets.metricsToken,
    databaseCommandMetrics: config.databaseCommandMetrics,
    allowLoopbackWebhooksInTest: config.devAllowLoopbackWebhooks,
    dashboardUrl: config.dashboardUrl,
    relay: outboxRelaySettings(config),
  })
  return service.stop
})
