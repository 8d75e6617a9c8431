/**
 * Slow clients on the public hosts: a request whose headers or body do not arrive within REQUEST_TIMEOUT_MS (headers
 * within at most 10 s) is answered 408 and its connection closed, so trickled requests cannot hold connections open
 * (Fastify's own default is no limit at all). A prompt request on the same server is served as usual.
 */
import { connect } from 'node:net'
import type { FastifyInstance } from 'fastify'
import Redis from 'ioredis'
import pino from 'pino'
import { createGatewayClient } from '@svc/gateway-client'
import { buildApiServer, buildCheckoutServer } from '../src'
import { bareServerDeps } from './helpers'

const REQUEST_TIMEOUT_MS = 1000
const gateway = createGatewayClient({ url: 'http://127.0.0.1:1/graphql', signer: { issuer: 'xrpc-adapter', key: 'unused' } })
const redis = new Redis({ lazyConnect: true })
const servers: FastifyInstance[] = []

/** every server's log lines */
const logged: Record<string, unknown>[] = []
const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line) as Record<string, unknown>) })

async function listening(build: typeof buildApiServer): Promise<number> {
  const deps = bareServerDeps(gateway)
  const app = await build({ ...deps, logger, redis, limits: { ...deps.limits, requestTimeoutMs: REQUEST_TIMEOUT_MS } })
  servers.push(app)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (typeof address !== 'object' || address === null) throw new Error('not listening')
  return address.port
}

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()))
  await gateway.close()
  redis.disconnect()
})

/** Sends `head`, then nothing more; resolves with what the server wrote before it closed the connection, and when. */
function trickle(port: number, head: string, giveUpMs = 10_000): Promise<{ answer: string; closedAfterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const socket = connect(port, '127.0.0.1', () => socket.write(head))
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => (answer += chunk))
    socket.on('error', () => undefined)
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`the connection was still open after ${giveUpMs} ms`))
    }, giveUpMs)
    socket.on('close', () => {
      clearTimeout(timer)
      resolve({ answer, closedAfterMs: Date.now() - started })
    })
  })
}

describe.each([
  ['api', buildApiServer],
  ['checkout', buildCheckoutServer],
])('the %s host', (_name, build) => {
  let port: number
  beforeAll(async () => {
    port = await listening(build)
  })

  it('answers 408 and closes a connection whose headers never finish', async () => {
    const { answer, closedAfterMs } = await trickle(port, 'GET /xrpc/_health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ')
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
    // the service's own shape and a request id, as every answer
    expect(answer).toMatch(/\r\nsvc-request-id: req_[0-9a-f]{32}\r\n/i)
    expect(answer.split('\r\n\r\n')[1]).toBe(JSON.stringify({ error: 'RequestTimeout', message: 'the request did not arrive in time' }))
    expect(closedAfterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50)
  })

  it('answers 408 and closes a connection whose body never finishes', async () => {
    const { answer } = await trickle(port, 'POST /xrpc/network.svc.payment.initiate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"amount":')
    expect(answer).toMatch(/^HTTP\/1\.1 408 /)
  })

  it('answers headers over the limit 431 with the service\'s shape and a request id', async () => {
    const { answer } = await trickle(port, `GET /livez HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`)
    expect(answer).toMatch(/^HTTP\/1\.1 431 /)
    expect(answer).toMatch(/\r\nsvc-request-id: req_[0-9a-f]{32}\r\n/i)
    // the id the client got is in the log, with what was refused
    const reqId = /\r\nsvc-request-id: (req_[0-9a-f]{32})\r\n/i.exec(answer)![1]
    expect(logged.find((l) => l.reqId === reqId)).toMatchObject({ msg: 'request refused before it could be read', statusCode: 431, code: 'HPE_HEADER_OVERFLOW' })
    expect(JSON.parse(answer.split('\r\n\r\n')[1]!)).toMatchObject({ error: 'InvalidRequest' })
  })

  it('serves a prompt request as usual', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/livez`)
    expect(res.status).toBe(200)
  })
})
