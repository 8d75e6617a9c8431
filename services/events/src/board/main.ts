/** `npm run board -w @svc/events`: the operators' board on BOARD_PORT (docs/events.md "Operators"). */
import pino from 'pino'
import { loadConfig, loggerOptions } from '@svc/config'
import { stopOnSignals } from '@svc/subgraph-server'
import { buildBoard } from './server'

async function main() {
  const config = loadConfig()
  const logger = pino(loggerOptions(config, 'board'))
  const board = await buildBoard({
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix,
    operatorToken: config.secrets.operatorToken,
    logger,
  })
  await board.listen({ host: config.host, port: config.ports.board })
  stopOnSignals(() => board.close())
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
