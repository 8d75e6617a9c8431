/**
 * A subgraph leaves SIGTERM and SIGINT to its process (runProcess: stop accepting, finish the requests in flight,
 * then close). Apollo Server stops itself on those signals unless told not to, outside NODE_ENV=test: in production
 * it stopped at once, before Fastify drained, and a request still arriving was answered 500 ("Cannot execute GraphQL
 * operations after the server has stopped").
 */
import { parse } from 'graphql'
import pino from 'pino'
import { testCallerKeys } from '@svc/testing/src/internal-context'
import { startSubgraph } from '../src'

test('a subgraph started with NODE_ENV=production adds no SIGTERM or SIGINT handler of its own', async () => {
  const before = { SIGTERM: process.listenerCount('SIGTERM'), SIGINT: process.listenerCount('SIGINT') }
  const nodeEnv = process.env.NODE_ENV
  process.env.NODE_ENV = 'production'
  let stop: (() => Promise<void>) | undefined
  try {
    ;({ stop } = await startSubgraph({
      name: 'signals',
      typeDefs: parse('type Query { ok: String }'),
      resolvers: { Query: { ok: () => 'ok' } },
      callerKeys: testCallerKeys(),
      logger: pino({ level: 'silent' }),
      host: '127.0.0.1',
      port: 0,
    }))
    expect({ SIGTERM: process.listenerCount('SIGTERM'), SIGINT: process.listenerCount('SIGINT') }).toEqual(before)
  } finally {
    process.env.NODE_ENV = nodeEnv
    await stop?.()
  }
})
