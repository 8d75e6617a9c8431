/**
 * The loggers every process makes (loggerOptions): secrets never reach a log line, among them what a library puts on
 * its errors. Against the real Redis: a wrong password makes ioredis fail AUTH with the password on the error.
 */
import { createServer } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import Redis from 'ioredis'
import mongoose from 'mongoose'
import pino from 'pino'
import { isolate } from '@svc/testing/src/isolation'
import { loggerOptions } from '../src'

function capture() {
  const lines: string[] = []
  const logger = pino(loggerOptions({ logLevel: 'info' }, 'test'), { write: (line: string) => void lines.push(line) })
  return { logger, lines }
}

it("a Redis error carrying the AUTH password is logged without it, as the queues' error listeners log it", async () => {
  const password = `pw-${Math.random().toString(36).slice(2)}`
  const url = new URL(isolate('config_logging').redisUrl)
  url.username = 'svc-nobody'
  url.password = password
  const redis = new Redis(url.toString(), { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
  // what a queue's 'error' listener receives
  const emitted = new Promise<unknown>((resolve) => redis.once('error', resolve))
  await redis.connect().catch(() => undefined)
  const err = await emitted
  redis.disconnect()
  expect(err).toBeInstanceOf(Error)
  // what makes the test meaningful: the library's error holds the password
  expect(JSON.stringify((err as { command?: unknown }).command)).toContain(password)
  const { logger, lines } = capture()
  logger.warn({ err, queue: 'domain-events' }, 'queue connection error')
  logger.error({ job: { err } }, 'nested')
  expect(lines).toHaveLength(2)
  for (const line of lines) {
    expect(line).not.toContain(password)
    expect(line).toContain('[redacted]')
  }
})

it('tokens, secrets, authorization and cookie headers are redacted', () => {
  const { logger, lines } = capture()
  logger.info({ req: { headers: { authorization: 'Bearer abc-secret-1', cookie: '__Host-svc_dashboard=dss_secret5' } }, checkout: { token: 'pst_test_secret2' }, env: { signingSecret: 'whsec_secret3', apiKey: 'svc_rk_secret4' } }, 'x')
  logger.info({ headers: { cookie: 'svc_dashboard=dss_secret6' } }, 'y')
  for (const secret of ['abc-secret-1', 'pst_test_secret2', 'whsec_secret3', 'svc_rk_secret4', 'dss_secret5']) expect(lines[0]).not.toContain(secret)
  expect(lines[1]).not.toContain('dss_secret6')
})

it('a secret field is redacted at the top of a line, in a child logger\'s bindings and two objects down', () => {
  const { logger, lines } = capture()
  logger.info({ token: 'pst_live_LEAK1', apiKey: 'svc_rk_live_LEAK2' }, 'top')
  logger.child({ secret: 'whsec_LEAK3' }).info('bound')
  logger.info({ job: { data: { pageToken: 'tkp_LEAK4' } } }, 'deep')
  expect(lines).toHaveLength(3)
  for (const line of lines) {
    expect(line).not.toContain('LEAK')
    expect(line).toContain('[redacted]')
  }
})

it("a database error carrying the documents of an insertMany (a paid hold's tickets, their tokens) is logged without them", async () => {
  const conn = await mongoose.createConnection(isolate('config_logging_documents').mongoUrl).asPromise()
  try {
    const Ticket = conn.model('Ticket', new mongoose.Schema({ _id: String, secret: String, pageToken: String }, { versionKey: false }))
    const ticket = { _id: `ticket_${Math.random().toString(36).slice(2)}`, secret: 'tkt_scan_LEAK', pageToken: 'tkp_page_LEAK' }
    await Ticket.create(ticket)
    // the settle of a paid hold inserts its tickets this way; this one fails on its duplicate
    const err = await Ticket.insertMany([ticket, { ...ticket, _id: `${ticket._id}_2` }], { ordered: false }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(Error)
    // what makes the test meaningful: the errors hold the tokens
    expect(JSON.stringify({ ...(err as object) })).toContain('tkt_scan_LEAK')
    const { logger, lines } = capture()
    logger.warn({ err }, 'the database cannot be reached')
    logger.error({ err: new Error('wrapped', { cause: err }) }, 'unexpected resolver error')
    expect(lines).toHaveLength(2)
    for (const line of lines) {
      expect(line).not.toMatch(/tkt_scan_LEAK|tkp_page_LEAK/)
      expect(line).toContain('E11000')
    }
  } finally {
    await conn.dropDatabase()
    await conn.close()
  }
})

it("a malformed request's parser error (which Fastify logs at trace) is logged without the request's bytes", async () => {
  // Node's HTTP parser puts the request up to the fault on its error, as `rawPacket`: the Authorization header included
  const server = createServer()
  const parserError = new Promise<Error>((resolve) =>
    server.on('clientError', (err: Error, socket: Socket) => {
      socket.destroy()
      resolve(err)
    }),
  )
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  try {
    const client = connect((server.address() as AddressInfo).port, '127.0.0.1')
    client.on('error', () => undefined)
    client.write('GET /checkout/x HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer jwt_LEAK\r\nBad\u0001Header: y\r\n\r\n')
    const err = await parserError
    client.destroy()
    // what makes the test meaningful: the error holds the bytes
    expect(Buffer.from((err as { rawPacket?: Buffer }).rawPacket ?? []).toString()).toContain('jwt_LEAK')
    const lines: string[] = []
    const logger = pino(loggerOptions({ logLevel: 'trace' }, 'test'), { write: (line: string) => void lines.push(line) })
    logger.trace({ err }, 'client error')
    expect(lines).toHaveLength(1)
    expect(lines[0]).not.toContain('rawPacket')
    // the byte list of "jwt_LEAK" as JSON would show a Buffer
    expect(lines[0]).not.toContain([...Buffer.from('jwt_LEAK')].join(','))
    expect(lines[0]).toContain('HPE_')
  } finally {
    await new Promise((resolve) => server.close(resolve))
  }
})
