import pino from 'pino'
import { loadConfig, loggerOptions } from '@svc/config'
import { buildGateway } from './server'

async function main() {
  const config = loadConfig()
  const logger = pino(loggerOptions(config, 'gateway'))
  const app = await buildGateway({
    services: [
      { name: 'apps', url: config.subgraphs.apps },
      { name: 'actors', url: config.subgraphs.actors },
      { name: 'payments', url: config.subgraphs.payments },
      { name: 'events', url: config.subgraphs.events },
    ],
    secrets: config.secrets,
    graphiql: config.graphiql,
    logger,
  })
  await app.listen({ host: config.host, port: config.ports.gateway })
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void app.close().finally(() => process.exit(0)))
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
