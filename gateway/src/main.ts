import { runProcess } from '@svc/config'
import { buildGateway } from './server'

runProcess('gateway', async (config, logger) => {
  const app = await buildGateway({
    services: [
      { name: 'apps', url: config.subgraphs.apps },
      { name: 'actors', url: config.subgraphs.actors },
      { name: 'payments', url: config.subgraphs.payments },
      { name: 'events', url: config.subgraphs.events },
      { name: 'tickets', url: config.subgraphs.tickets },
    ],
    secrets: { callerKeys: config.secrets.callerKeys, operatorToken: config.secrets.operatorToken, metricsToken: config.secrets.metricsToken },
    graphiql: config.graphiql,
    logger,
    subgraphTimeoutMs: config.subgraphTimeoutMs,
  })
  await app.listen({ host: config.host, port: config.ports.gateway })
  return () => app.close()
})
