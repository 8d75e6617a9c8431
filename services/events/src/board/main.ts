/** `npm run board -w @svc/events`: the operators' board on BOARD_PORT (docs/events.md "Operators"). */
import { runProcess } from '@svc/config'
import { buildBoard } from './server'

runProcess('board', async (config, logger) => {
  const board = await buildBoard({
    redisUrl: config.redisUrl,
    redisPrefix: config.redisPrefix,
    operatorToken: config.secrets.operatorToken,
    logger,
  })
  await board.listen({ host: config.host, port: config.ports.board })
  return () => board.close()
})
