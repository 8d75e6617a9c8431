/** The shared gateway client against a real HTTP server on loopback that answers as the gateway would. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ContractError } from '@svc/errors'
import { freePort } from '@svc/testing'
import { verifyContext, type CallerKeys } from '@svc/internal-context'
import { createGatewayClient, GatewayUnavailableError, type GatewayClient } from '../src'

interface Seen {
  headers: IncomingHttpHeaders
  body: { query: string; variables: Record<string, unknown> }
}

let server: Server
let url: string
let answer: (seen: Seen) => { status?: number; body: string; delayMs?: number }
const seen: Seen[] = []
const clients: GatewayClient[] = []
const keys: CallerKeys = { gateway: 'g'.repeat(40), 'xrpc-adapter': 'a'.repeat(40), events: 'e'.repeat(40), payments: 'p'.repeat(40), apps: 'q'.repeat(40), tickets: 't'.repeat(40) }
const client = (opts: { timeoutMs?: number; url?: string } = {}) => {
  const c = createGatewayClient({ url: opts.url ?? url, signer: { issuer: 'events', key: keys.events }, ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}) })
  clients.push(c)
  return c
}
const as = { principal: { kind: 'service', name: 'events' } as const, requestId: 'req-1' }

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = ''
    req.on('data', (c: Buffer) => (raw += c.toString()))
    req.on('end', () => {
      const s = { headers: req.headers, body: JSON.parse(raw) as Seen['body'] }
      seen.push(s)
      const a = answer(s)
      setTimeout(() => res.writeHead(a.status ?? 200, { 'content-type': 'application/json' }).end(a.body), a.delayMs ?? 0)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`
})

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()))
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

beforeEach(() => {
  seen.length = 0
})

it('posts the document with a context signed by its own key stating the principal it calls as, and the request id, and returns data', async () => {
  answer = () => ({ body: JSON.stringify({ data: { paymentStatus: { status: 'pending' } } }) })
  const data = await client().query<{ paymentStatus: { status: string } }>('query Q($t: String!) { paymentStatus(token: $t) { status } }', { t: 'x' }, as)
  expect(data).toEqual({ paymentStatus: { status: 'pending' } })
  expect(seen).toHaveLength(1)
  expect(seen[0]!.headers.authorization).toBeUndefined()
  const verified = verifyContext(keys, String(seen[0]!.headers['svc-context']))
  expect(verified).toMatchObject({ ok: true, context: { issuer: 'events', principal: as.principal, requestId: 'req-1' } })
  expect(seen[0]!.headers['svc-request-id']).toBe('req-1')
  expect(seen[0]!.body).toEqual({ query: 'query Q($t: String!) { paymentStatus(token: $t) { status } }', variables: { t: 'x' } })
})

it('returns the first error that carries a contract code as that ContractError', async () => {
  answer = () => ({
    body: JSON.stringify({
      data: null,
      errors: [{ message: 'Cannot return null for non-nullable field' }, { message: 'no such app', extensions: { code: 'AppNotRegistered' } }],
    }),
  })
  const err = await client().query('{ x }', {}, as).catch((e: unknown) => e)
  expect(err).toBeInstanceOf(ContractError)
  expect(err).toMatchObject({ code: 'AppNotRegistered', message: 'no such app', status: 404 })
})

it('turns an uncoded error, an InternalServerError or an answer without data into InternalServerError, and logs it', async () => {
  const logged: string[] = []
  const log = { error: (_obj: object, msg: string) => void logged.push(msg), warn: () => undefined }
  for (const body of [
    { errors: [{ message: 'boom' }] },
    { errors: [{ message: 'masked', extensions: { code: 'InternalServerError' } }] },
    { data: null },
  ]) {
    answer = () => ({ body: JSON.stringify(body) })
    const err = await client().query('{ x }', {}, { ...as, log }).catch((e: unknown) => e)
    expect(err).toMatchObject({ code: 'InternalServerError', message: 'internal error' })
  }
  expect(logged).toEqual(['gateway returned an unexpected error', 'gateway returned an unexpected error', 'gateway answered neither data nor errors'])
})

it("says in the log when the gateway refuses this process's context (a wrong key, clocks apart), rather than an unexplained 500", async () => {
  const logged: string[] = []
  const log = { error: (_obj: object, msg: string) => void logged.push(msg), warn: () => undefined }
  answer = () => ({ status: 401, body: JSON.stringify({ error: 'Unauthorized', message: 'the gateway needs a signed internal context or the operator credential' }) })
  const err = await client().query('{ x }', {}, { ...as, log }).catch((e: unknown) => e)
  expect(err).toMatchObject({ code: 'InternalServerError' })
  expect(logged).toEqual([expect.stringMatching(/refused this process's context: check its key/)])
})

it("logs a failed call that brings no logger with the client's own, with the call's request id", async () => {
  const logged: { obj: object; msg: string }[] = []
  const logger = { error: (obj: object, msg: string) => void logged.push({ obj, msg }), warn: () => undefined }
  const c = createGatewayClient({ url, signer: { issuer: 'events', key: keys.events }, logger })
  clients.push(c)
  answer = () => ({ body: JSON.stringify({ errors: [{ message: 'boom' }] }) })
  expect(await c.query('{ x }', {}, as).catch((e: unknown) => e)).toMatchObject({ code: 'InternalServerError' })
  expect(logged).toEqual([{ obj: expect.objectContaining({ reqId: 'req-1' }), msg: 'gateway returned an unexpected error' }])
})

it('is GatewayUnavailableError (ServiceUnavailable) when the gateway cannot be reached, answers no GraphQL, or is too slow', async () => {
  const closedPort = await freePort()
  const levels: string[] = []
  const log = { error: () => void levels.push('error'), warn: () => void levels.push('warn') }
  const refused = await client({ url: `http://127.0.0.1:${closedPort}/graphql` }).query('{ x }', {}, { ...as, log }).catch((e: unknown) => e)
  expect(refused).toBeInstanceOf(GatewayUnavailableError)
  expect(refused).toMatchObject({ code: 'ServiceUnavailable', status: 503, reason: 'ECONNREFUSED' })
  // an outage answered 503, not a defect: a warn line, not an error line per request
  expect(levels).toEqual(['warn'])

  answer = () => ({ status: 502, body: '<html>bad gateway</html>' })
  const notGraphql = await client().query('{ x }', {}, as).catch((e: unknown) => e)
  expect(notGraphql).toMatchObject({ code: 'ServiceUnavailable', reason: 'HTTP 502' })

  // undici checks its timeouts on a coarse timer: the answer comes well after the deadline
  answer = () => ({ body: JSON.stringify({ data: { x: 1 } }), delayMs: 2500 })
  const slow = await client({ timeoutMs: 100 }).query('{ x }', {}, as).catch((e: unknown) => e)
  expect(slow).toMatchObject({ code: 'ServiceUnavailable', reason: 'UND_ERR_HEADERS_TIMEOUT' })
})
