/** The actors subgraph's process. */
import { runProcess } from '@svc/config'
import { startActorsService } from './server'

runProcess('actors', async (config, logger) => {
  const service = await startActorsService({
    mongoUrl: config.mongoUrl,
    callerKeys: config.secrets.callerKeys,
    host: config.host,
    port: config.ports.actorsSubgraph,
    logger,
    metricsToken: config.secrets.metricsToken,
    databaseCommandMetrics: config.databaseCommandMetrics,
  })
  return service.stop
})
