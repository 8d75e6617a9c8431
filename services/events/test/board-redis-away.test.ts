/**
 * The operators' board while its Redis cannot be reached (a restart, a failover) or stops answering with its
 * connection open (a paused machine, a partition): its JSON API answers 503 ServiceUnavailable promptly, as
 * `{ error, message }`, instead of holding the request until Redis is back; the page itself is still served, and the
 * board closes. Nothing here touches the shared Redis: the board is pointed at a port nothing listens on, or at a
 * server that answers the connection's ready check and then nothing.
 */
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import pino from 'pino'
import { freePort, startSilentRedis, type SilentRedis } from '@svc/testing'
import { buildBoard } from '../src/board/server'
import { DOMAIN_EVENTS_QUEUE } from '../src/queues'

const token = randomBytes(32).toString('hex')
const API_PATHS = [`/board/api/queues?activeQueue=${DOMAIN_EVENTS_QUEUE}&status=latest&page=1&jobsPerPage=10`, '/board/api/redis/stats', `/board/api/queues/${DOMAIN_EVENTS_QUEUE}/evt_x`]

async function startBoard(redisUrl: string, logLines: string[] = []): Promise<{ board: FastifyInstance; url: string }> {
  const logger = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _enc, done) {
        logLines.push(String(chunk))
        done()
      },
    }),
  )
  const board = await buildBoard({ redisUrl, redisPrefix: `board_away_${randomBytes(4).toString('hex')}:`, operatorToken: token, logger })
  await board.listen({ host: '127.0.0.1', port: 0 })
  return { board, url: `http://127.0.0.1:${(board.server.address() as AddressInfo).port}` }
}

/**
 * The answer, and how long it took; a request held open is cut off after 10 s. The bounds below only tell an answer
 * from such a hang (the answers come in about 2 s; a loaded machine stretches that, so no tighter bound is asserted).
 */
async function timed(url: string): Promise<{ status: number; body: unknown; ms: number }> {
  const started = Date.now()
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) })
  const text = await res.text()
  return { status: res.status, body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text, ms: Date.now() - started }
}

describe('Redis refuses every connection', () => {
  let board: FastifyInstance
  let url: string
  let closed = false
  const logLines: string[] = []
  beforeAll(async () => {
    ;({ board, url } = await startBoard(`redis://127.0.0.1:${await freePort()}/0`, logLines))
  })
  afterAll(async () => {
    if (!closed) await board?.close()
  })

  test.each(API_PATHS)('%s answers 503 ServiceUnavailable within seconds, with no stack', async (path) => {
    const { status, body, ms } = await timed(`${url}${path}`)
    expect(status).toBe(503)
    expect(body).toEqual({ error: 'ServiceUnavailable', message: expect.stringMatching(/Redis/) })
    expect(ms).toBeLessThan(9_000)
  })

  test('the page is served all the same, and the refusals are logged as warnings with request ids', async () => {
    expect((await timed(`${url}/board`)).status).toBe(200)
    const warned = logLines.map((l) => JSON.parse(l) as { level: number; msg?: string; reqId?: string }).filter((l) => l.msg === 'board: Redis unavailable')
    expect(warned.length).toBeGreaterThan(0)
    expect(warned.every((l) => l.level === 40 && /^req_/.test(l.reqId ?? ''))).toBe(true)
  })

  test('the board closes promptly', async () => {
    const started = Date.now()
    await board.close()
    closed = true
    expect(Date.now() - started).toBeLessThan(9_000)
  })
})

describe('Redis stops answering with its connection open', () => {
  let silent: SilentRedis
  let board: FastifyInstance
  let url: string
  beforeAll(async () => {
    silent = await startSilentRedis()
    ;({ board, url } = await startBoard(silent.url))
  })
  afterAll(async () => {
    await board?.close()
    await silent?.close()
  })

  test('the queue list answers 503 ServiceUnavailable after the 2 s command timeout, not when the socket drops', async () => {
    const { status, body, ms } = await timed(`${url}${API_PATHS[0]}`)
    expect(status).toBe(503)
    expect(body).toEqual({ error: 'ServiceUnavailable', message: expect.stringMatching(/Redis/) })
    expect(ms).toBeLessThan(9_000)
  })
})
