/**
 * The operators' board (docs/events.md "Operators"): @bull-board over every queue of the events domain
 * (ALL_QUEUES, under the deployment's BullMQ prefix), read-only, behind operator authentication on every route of it: the
 * page, its static assets and its JSON API (`<basePath>/api/queues`, …). `/health` alone answers without it.
 * Request logs are pino's with a request id (also the `svc-request-id` response header); headers are not logged.
 */
import { randomUUID } from 'node:crypto'
import { createBullBoard } from '@bull-board/api'
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter'
import { FastifyAdapter } from '@bull-board/fastify'
import { Queue } from 'bullmq'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import Redis from 'ioredis'
import type { Logger } from 'pino'
import { REQUEST_ID_HEADER } from '@svc/internal-context'
import { closingConnections, REQUEST_REDIS_OPTIONS } from '@svc/operations'
import { ALL_QUEUES, queuePrefix } from '../queues'
import { BOARD_REALM, checkOperator } from './auth'
import { boardError, boardErrorResponse, boardRefusalBody } from './errors'

export interface BoardOptions {
  redisUrl: string
  /** REDIS_PREFIX; the queues live under queuePrefix(redisPrefix) */
  redisPrefix: string
  /** OPERATOR_TOKEN: the Basic password or the Bearer token */
  operatorToken: string
  logger: Logger
  /** where the board is mounted (default `/board`) */
  basePath?: string
}

export const DEFAULT_BOARD_PATH = '/board'

/** The request line logged: its path only (the board's own URLs carry no secret, but a script or a pasted link may put one in a query). */
const requestSerializer = (req: { method?: string; url?: string; ip?: string }) => ({ method: req.method, url: (req.url ?? '').split(/[?#]/)[0], remoteAddress: req.ip })

export async function buildBoard(opts: BoardOptions): Promise<FastifyInstance> {
  if (typeof opts.operatorToken !== 'string' || opts.operatorToken.length < 32) throw new Error('board: operatorToken must be at least 32 characters')
  const basePath = `/${(opts.basePath ?? DEFAULT_BOARD_PATH).replace(/^\/+|\/+$/g, '')}`
  const app = Fastify({
    loggerInstance: opts.logger.child({ component: 'board' }, { serializers: { req: requestSerializer } }) as FastifyBaseLogger,
    genReqId: () => `req_${randomUUID().replace(/-/g, '')}`,
  })

  // Before any route exists, so it guards every one of them (and the 404s: nothing is revealed unauthenticated).
  app.addHook('onRequest', async (request, reply) => {
    reply.header(REQUEST_ID_HEADER, request.id)
    if (request.routeOptions.url === '/health') return
    const header = request.headers.authorization
    const result = checkOperator(Array.isArray(header) ? header[0] : header, opts.operatorToken)
    if (result.ok) return
    request.log.warn({ reason: result.reason }, 'board: operator authentication failed')
    return reply.code(401).header('www-authenticate', BOARD_REALM).send({ error: 'Unauthorized', message: 'the board needs the operator token' })
  })

  // Read-only before bull-board sees the request: its read-only mode refuses each queue's actions (405), but its
  // all-queues pause and resume answered 200 (skipping the read-only queues), and every non-GET route of its API
  // writes. So any other method answers 405 here, naming what the board is.
  app.addHook('onRequest', async (request, reply) => {
    if (request.method === 'GET' || request.method === 'HEAD') return
    return reply.code(405).header('allow', 'GET, HEAD').send({ error: 'MethodNotAllowed', message: 'the board is read-only: it never changes a queue or a job' })
  })
  // bull-board's own refusals (an unknown queue or job, a bad parameter) in the service's shape too (errors.ts)
  app.addHook('onSend', async (_request, reply, payload) => {
    const body = boardRefusalBody(reply.statusCode, payload)
    return body ? JSON.stringify(body) : payload
  })

  app.get('/health', async () => ({ ok: true }))
  // Errors leave as the service's `{ error, message }`, never with a stack (errors.ts); the request's logger says
  // what an unexpected one was. Set before the board's plugin registers, so its routes inherit both.
  app.addHook('onError', async (request, _reply, err) => {
    const { status } = boardError(err)
    if (status === 503) request.log.warn({ err }, 'board: Redis unavailable')
    else if (status >= 500) request.log.error({ err }, 'board: unexpected error')
  })
  app.setErrorHandler((err, _request, reply) => {
    const { status, body } = boardErrorResponse(err)
    return reply.code(status).send(body)
  })
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'NotFound', message: 'no such route' }))
  await app.register(closingConnections)

  // While Redis is away a board request answers 503 at once (errors.ts), never held until Redis is back: a command
  // fails at the first failed reconnect (maxRetriesPerRequest 1; with null, the API's reads waited in ioredis's offline
  // queue with no end) or after 2 s without an answer (REQUEST_REDIS_OPTIONS). The board only reads, through Queue
  // instances, which make no blocking calls: BullMQ asks maxRetriesPerRequest null only of workers' connections. Nor
  // do the queues wait for the connection's first ready or ask Redis its version (as producerQueue in @svc/outbox): a
  // board started while Redis is away would hold every request, or refuse every one until restarted.
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: 1, disconnectTimeout: 200, ...REQUEST_REDIS_OPTIONS })
  const queues = ALL_QUEUES.map((name) => new Queue(name, { connection: redis, prefix: queuePrefix(opts.redisPrefix), skipVersionCheck: true, skipWaitingForReady: true }))
  for (const queue of queues) queue.on('error', (err) => app.log.warn({ err, queue: queue.name }, 'board: queue connection error'))

  const serverAdapter = new FastifyAdapter()
  serverAdapter.setBasePath(basePath)
  createBullBoard({
    // read-only: a job removed, added or edited here would be lost from, or unknown to, the database that records
    // what is due (a relayed event has no other trace); recovery is the reconciler's and redrive's, never the board's
    queues: queues.map((queue) => new BullMQAdapter(queue, { readOnlyMode: true })),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'svc events' } },
  })
  // replaces bull-board's error handler, which answers a stack under NODE_ENV=development (its static files' 403 too);
  // its status type lists only the statuses of its own handlers (not 413 or 503), hence the cast
  serverAdapter.setErrorHandler(boardErrorResponse as unknown as Parameters<FastifyAdapter['setErrorHandler']>[0])
  await app.register(serverAdapter.registerPlugin(), { prefix: basePath })

  app.addHook('onClose', async () => {
    await Promise.all(queues.map((queue) => queue.close()))
    await redis.quit().catch(() => redis.disconnect())
  })
  return app
}
