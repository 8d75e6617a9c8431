/**
 * The poller and the initiate retry rule against a real node:http server on 127.0.0.1 that scripts its answers.
 * Asserts how many requests the server saw, that each carried a fresh service JWT (distinct jti) with the right
 * iss/aud/lxm, and the final result. Small delays; no timing assertions.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { generateDidKeyKeypair } from '@svc/service-auth'
import { buildProduct, createSvcClient, initiateCheckout, mintAssertion, parseRetryAfter, pollPaymentStatus, PollTimeoutError, SvcError, type SvcClient } from '../src'

const SERVICE_DID = 'did:web:svc.test'
const STATUS = 'network.svc.payment.status'
const INITIATE = 'network.svc.payment.initiate'

interface Seen {
  /** when the request arrived (ms) */
  at: number
  method: string
  nsid: string
  query: URLSearchParams
  body: string
  claims: Record<string, unknown>
}

/** One scripted answer: status, JSON body, headers; or 'drop' to destroy the socket (a network failure). */
type Step = { status: number; body?: unknown; headers?: Record<string, string> } | 'drop' | 'hang'

let server: Server
let baseUrl: string
let script: Step[] = []
let seen: Seen[] = []

function claimsOf(req: IncomingMessage): Record<string, unknown> {
  const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? ''
  const payload = token.split('.')[1] ?? ''
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
}

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      // a request of an earlier test's client (its poll gave up while the request was on its way) is not this test's
      if (claimsOf(req).iss !== appDid) return void req.socket.destroy()
      const url = new URL(req.url ?? '/', 'http://127.0.0.1')
      seen.push({ at: Date.now(), method: req.method ?? '', nsid: url.pathname.replace('/xrpc/', ''), query: url.searchParams, body: Buffer.concat(chunks).toString(), claims: claimsOf(req) })
      const step = script.shift() ?? { status: 500, body: { error: 'ScriptExhausted', message: 'no scripted answer left' } }
      if (step === 'drop') return void req.socket.destroy()
      if (step === 'hang') return
      res.writeHead(step.status, { 'content-type': 'application/json', 'svc-request-id': `req_${String(seen.length).padStart(32, '0')}`, ...step.headers })
      res.end(step.body === undefined ? '' : JSON.stringify(step.body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

let client: SvcClient
let appDid: string
beforeEach(async () => {
  script = []
  seen = []
  const kp = await generateDidKeyKeypair('ES256K')
  appDid = kp.did
  client = createSvcClient({ baseUrl, appDid, serviceDid: SERVICE_DID, privateKeyHex: kp.privateKeyHex, alg: 'ES256K', requestTimeoutMs: 2000 })
})

const err = (status: number, error: string, headers?: Record<string, string>): Step => ({ status, body: { error, message: `${error} (scripted)` }, headers })
const ok = (body: unknown): Step => ({ status: 200, body })
const FAST = { initialDelayMs: 5, maxDelayMs: 20 }
const REF = { uri: 'at://did:web:svc.test/money.svc.payment.record/3kabc', cid: 'bafyreib' }

/** Every request carried a fresh JWT for this app, this service and this method. */
function expectFreshJwts(lxm: string) {
  expect(seen.map((s) => ({ iss: s.claims.iss, aud: s.claims.aud, lxm: s.claims.lxm, nsid: s.nsid }))).toEqual(
    seen.map(() => ({ iss: appDid, aud: SERVICE_DID, lxm, nsid: lxm })),
  )
  const jtis = seen.map((s) => s.claims.jti)
  expect(jtis.every((j) => typeof j === 'string' && j.length > 0)).toBe(true)
  expect(new Set(jtis).size).toBe(jtis.length)
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (e) {
    return e
  }
  throw new Error('expected a rejection')
}

describe('pollPaymentStatus', () => {
  it('retries 503s, polls through pending and processing, returns completed with its ref', async () => {
    script = [err(503, 'ServiceUnavailable'), err(503, 'ServiceUnavailable'), ok({ status: 'pending' }), ok({ status: 'processing' }), ok({ status: 'completed', ref: REF })]
    const progress: string[] = []
    const result = await pollPaymentStatus(client, 'tok_1', { ...FAST, onStatus: (s) => progress.push(s.status) })
    expect(result).toEqual({ status: 'completed', ref: REF })
    expect(seen).toHaveLength(5)
    expect(seen.every((s) => s.method === 'GET' && s.query.get('token') === 'tok_1')).toBe(true)
    expect(progress).toEqual(['pending', 'processing'])
    expectFreshJwts(STATUS)
  })

  it('failed is terminal too', async () => {
    script = [ok({ status: 'pending' }), ok({ status: 'failed' }), ok({ status: 'completed' })]
    expect(await pollPaymentStatus(client, 'tok_2', FAST)).toEqual({ status: 'failed' })
    expect(seen).toHaveLength(2)
  })

  it('a 200 that is not JSON (a proxy\'s page mid-deploy) is retried like no answer', async () => {
    script = [{ status: 200, body: '<html>deploying</html>' }, { status: 200 }, ok({ status: 'completed', ref: REF })]
    expect(await pollPaymentStatus(client, 'tok_4', FAST)).toEqual({ status: 'completed', ref: REF })
    expect(seen).toHaveLength(3)
  })

  it('a 429 with Retry-After and a dropped connection are retried', async () => {
    script = [err(429, 'RateLimited', { 'retry-after': '1' }), 'drop', err(502, 'BadGateway'), ok({ status: 'completed', ref: REF })]
    expect(await pollPaymentStatus(client, 'tok_3', FAST)).toEqual({ status: 'completed', ref: REF })
    expect(seen).toHaveLength(4)
    expectFreshJwts(STATUS)
  })

  it.each([
    [404, 'NotFound'],
    [400, 'InvalidToken'],
    [400, 'MissingToken'],
    [403, 'AppUnauthorized'],
    [501, 'MethodNotImplemented'],
  ])('%s %s is thrown at once, after one request', async (status, code) => {
    script = [err(status, code), ok({ status: 'completed' })]
    const e = await rejection(pollPaymentStatus(client, 'tok_4', FAST))
    expect(e).toBeInstanceOf(SvcError)
    expect({ status: (e as SvcError).status, error: (e as SvcError).error, requestId: (e as SvcError).requestId }).toEqual({
      status,
      error: code,
      requestId: `req_${'1'.padStart(32, '0')}`,
    })
    expect(seen).toHaveLength(1)
  })

  it('gives up with PollTimeoutError when timeoutMs elapses first', async () => {
    script = Array.from({ length: 100 }, () => ok({ status: 'pending' }))
    // long enough for the first answer on a loaded machine (each request signs a fresh ES256K token), short enough
    // that the 100 answers scripted (one every 20 ms at most) are not used up
    const e = await rejection(pollPaymentStatus(client, 'tok_5', { ...FAST, timeoutMs: 500 }))
    expect(e).toBeInstanceOf(PollTimeoutError)
    expect((e as PollTimeoutError).lastStatus).toBe('pending')
    // every request the server saw is an attempt; one started just before the time was up may be cut before it arrives
    const { attempts } = e as PollTimeoutError
    expect(attempts - seen.length).toBeGreaterThanOrEqual(0)
    expect(attempts - seen.length).toBeLessThanOrEqual(1)
    expect(seen.length).toBeGreaterThanOrEqual(1)
    expectFreshJwts(STATUS)
  })

  it('a request that never answers counts against timeoutMs', async () => {
    script = ['hang']
    const e = await rejection(pollPaymentStatus(client, 'tok_6', { ...FAST, timeoutMs: 100 }))
    expect(e).toBeInstanceOf(PollTimeoutError)
    expect((e as PollTimeoutError).lastStatus).toBeUndefined()
    expect(seen).toHaveLength(1)
  })

  it('a request that hangs waits its own timeout, not the whole poll\'s: the next request gets the answer', async () => {
    script = ['hang', ok({ status: 'completed', ref: REF })]
    const res = await pollPaymentStatus(client, 'tok_hang', { ...FAST, timeoutMs: 5000, requestTimeoutMs: 50 })
    expect(res).toEqual({ status: 'completed', ref: REF })
    expect(seen).toHaveLength(2)
  })

  it('without requestTimeoutMs a hanging request waits the client\'s requestTimeoutMs (2 s here), not 30 s', async () => {
    script = ['hang', ok({ status: 'completed', ref: REF })]
    expect(await pollPaymentStatus(client, 'tok_hang_client', FAST)).toEqual({ status: 'completed', ref: REF })
    expect(seen).toHaveLength(2)
  }, 10_000)

  it('a Retry-After beyond what a timer takes waits (it used to overflow and retry at once)', async () => {
    script = [err(429, 'RateLimitExceeded', { 'retry-after': '3000000' }), ok({ status: 'completed', ref: REF })]
    const controller = new AbortController()
    const polling = pollPaymentStatus(client, 'tok_long', { ...FAST, signal: controller.signal })
    await new Promise((r) => setTimeout(r, 200))
    expect(seen).toHaveLength(1)
    controller.abort(new Error('enough'))
    await expect(polling).rejects.toThrow('enough')
  })

  it('stops when the signal aborts, with the abort reason', async () => {
    script = Array.from({ length: 100 }, () => ok({ status: 'pending' }))
    const controller = new AbortController()
    const reason = new Error('shutting down')
    const polling = pollPaymentStatus(client, 'tok_7', { initialDelayMs: 5, signal: controller.signal, onStatus: () => controller.abort(reason) })
    expect(await rejection(polling)).toBe(reason)
    expect(seen).toHaveLength(1)
  })
})

describe('initiateCheckout', () => {
  const product = buildProduct({
    recipientDid: 'did:plc:creator000000000000000000',
    paymentType: 'tip',
    amount: 500,
    currency: 'usd',
    appOrderId: 'order-42',
    description: 'Tip',
    returnUrl: 'https://app.example.com/thanks',
    cancelUrl: 'https://app.example.com/cancel',
  })
  const STARTED = { token: 'st_abc', url: 'http://checkout.test/checkout/bt_xyz' }

  it('after 503 and a dropped connection, retries with the same product and returns the attempt', async () => {
    script = [err(503, 'ServiceUnavailable'), 'drop', ok(STARTED)]
    expect(await initiateCheckout(client, product, FAST)).toEqual(STARTED)
    expect(seen).toHaveLength(3)
    expect(seen.map((s) => s.method)).toEqual(['POST', 'POST', 'POST'])
    expect(seen.map((s) => JSON.parse(s.body))).toEqual([{ product }, { product }, { product }])
    expectFreshJwts(INITIATE)
  })

  it('fields are encoded once: every retry sends the identical product string', async () => {
    script = [err(500, 'InternalServerError'), ok(STARTED)]
    const fields = { recipientDid: appDid, paymentType: 'shop', amount: 1, currency: 'eur', appOrderId: 'o-1', description: 'x', returnUrl: 'https://a.example/r', cancelUrl: 'https://a.example/c' } as const
    expect(await initiateCheckout(client, fields, FAST)).toEqual(STARTED)
    expect(seen.map((s) => JSON.parse(s.body).product)).toEqual([buildProduct(fields), buildProduct(fields)])
  })

  it('gives up after retries + 1 requests with the last transient error', async () => {
    script = [err(503, 'A'), err(503, 'B'), err(503, 'C'), err(503, 'D'), ok(STARTED)]
    const e = await rejection(initiateCheckout(client, product, { ...FAST, retries: 3 }))
    expect({ status: (e as SvcError).status, error: (e as SvcError).error }).toEqual({ status: 503, error: 'D' })
    expect(seen).toHaveLength(4)
    expectFreshJwts(INITIATE)
  })

  it('a Retry-After that would pass timeoutMs is not waited for: the transient error is thrown at once', async () => {
    script = [err(503, 'Maintenance', { 'retry-after': '600' }), ok(STARTED)]
    // (waiting the 600 s would outlast the test)
    const e = await rejection(initiateCheckout(client, product, { ...FAST, timeoutMs: 5000 }))
    expect({ status: (e as SvcError).status, error: (e as SvcError).error }).toEqual({ status: 503, error: 'Maintenance' })
    expect(seen).toHaveLength(1)
    // within it, a Retry-After is honoured: the retry comes a second later, though FAST's own backoff is milliseconds
    seen = []
    script = [err(503, 'Busy', { 'retry-after': '1' }), ok(STARTED)]
    expect(await initiateCheckout(client, product, { ...FAST, timeoutMs: 5000 })).toEqual(STARTED)
    expect(seen).toHaveLength(2)
    expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(1000 - 5)
    await expect(initiateCheckout(client, product, { timeoutMs: 0 })).rejects.toBeInstanceOf(RangeError)
  })

  it("a request still out when timeoutMs is up ends with it (the client's request timeout, 2 s here, is longer)", async () => {
    script = ['hang']
    const e = (await rejection(initiateCheckout(client, product, { ...FAST, timeoutMs: 200 }))) as SvcError
    expect({ status: e.status, error: e.error, transient: e.transient }).toEqual({ status: 0, error: 'Timeout', transient: true })
    expect(e.message).toMatch(/within initiateCheckout's timeoutMs \(200 ms\)/)
    expect(seen).toHaveLength(1)
  })

  it('a timeout no timer can take (over 2^31 - 1 ms) is refused up front, not fired at once', async () => {
    await expect(pollPaymentStatus(client, 'tok_far', { timeoutMs: 2 ** 31 })).rejects.toThrow(RangeError)
    await expect(client.getPaymentStatus({ token: 'tok_far' }, { timeoutMs: 2 ** 32 })).rejects.toThrow(/timeoutMs must be from 1/)
    await expect(client.getPaymentStatus({ token: 'tok_far' }, { timeoutMs: 0 })).rejects.toThrow(RangeError)
    expect(seen).toHaveLength(0)
  })

  it('retries: 0 makes one request', async () => {
    script = [err(503, 'A'), ok(STARTED)]
    await expect(initiateCheckout(client, product, { ...FAST, retries: 0 })).rejects.toBeInstanceOf(SvcError)
    expect(seen).toHaveLength(1)
  })

  it.each([
    [400, 'InvalidProduct'],
    [400, 'RecipientNotPayable'],
    [403, 'AppUnauthorized'],
    [501, 'MethodNotImplemented'],
  ])('%s %s is thrown at once', async (status, code) => {
    script = [err(status, code), ok(STARTED)]
    const e = await rejection(initiateCheckout(client, product, FAST))
    expect({ status: (e as SvcError).status, error: (e as SvcError).error }).toEqual({ status, error: code })
    expect(seen).toHaveLength(1)
  })

  it('invalid fields are refused before any request', async () => {
    await expect(initiateCheckout(client, { ...JSON.parse('{}'), paymentType: 'tip' }, FAST)).rejects.toThrow(/invalid checkout product/)
    expect(seen).toHaveLength(0)
  })

  it('ticket and subscription products, which initiate always refuses, are refused by the builder', async () => {
    const fields = { recipientDid: 'did:plc:creator', appOrderId: 'order-1', description: 'x', amount: 500, currency: 'usd', returnUrl: 'https://app.example/ok', cancelUrl: 'https://app.example/no' }
    expect(() => buildProduct({ ...fields, paymentType: 'ticket', holdId: 'hold_1' } as never)).toThrow(/createTicketHold/)
    expect(() => buildProduct({ ...fields, paymentType: 'subscription', cadence: 'month' } as never)).toThrow(/not available yet/)
    await expect(initiateCheckout(client, { ...fields, paymentType: 'subscription', cadence: 'month' } as never, FAST)).rejects.toThrow(/not available yet/)
    expect(buildProduct({ ...fields, paymentType: 'tip' })).toMatch(/^svc\.checkout\.v1:/)
    expect(seen).toHaveLength(0)
  })
})

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-11-29T12:00:00Z')
  it('reads delta-seconds and an HTTP date; anything else is no Retry-After (the client backs off as usual)', () => {
    expect(parseRetryAfter('20', now)).toBe(20_000)
    expect(parseRetryAfter(' 0 ', now)).toBe(0)
    expect(parseRetryAfter('Sun, 29 Nov 2026 12:00:30 GMT', now)).toBe(30_000)
    expect(parseRetryAfter('Sun, 29 Nov 2026 11:00:00 GMT', now)).toBe(0)
    for (const unreadable of [null, '', '1.5', '-1', '1e3', 'soon']) expect(parseRetryAfter(unreadable, now)).toBeUndefined()
  })
})

describe('mintAssertion', () => {
  it('mints for up to the 300 s the service takes; a longer or fractional lifetime is refused before signing', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256K')
    const mint = (expiresInSeconds?: number) => mintAssertion({ keypair, did, serviceDid: 'did:web:svc.example.com', nsid: 'tickets.svc.claimFreeTicket', expiresInSeconds })
    const lifetime = (jwt: string) => {
      const { iat, exp } = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString('utf8')) as { iat: number; exp: number }
      return exp - iat
    }
    expect(lifetime(await mint())).toBe(60)
    expect(lifetime(await mint(300))).toBe(300)
    for (const refused of [301, 3600, 0, 1.5, -60]) await expect(mint(refused)).rejects.toThrow(RangeError)
  })
})

describe('the client', () => {
  it('an error status without a contract body is HttpError; a non-JSON 200 is InvalidResponse', async () => {
    script = [{ status: 502, body: undefined }]
    const first = (await rejection(client.getPaymentStatus({ token: 't' }))) as SvcError
    expect({ status: first.status, error: first.error, transient: first.transient }).toEqual({ status: 502, error: 'HttpError', transient: true })
    script = [{ status: 200, body: 'just text' }]
    const second = (await rejection(client.getPaymentStatus({ token: 't' }))) as SvcError
    expect({ status: second.status, error: second.error, transient: second.transient }).toEqual({ status: 0, error: 'InvalidResponse', transient: true })
    // an empty 200 (a proxy's) is no answer either
    script = [{ status: 200 }]
    expect(((await rejection(client.getPaymentStatus({ token: 't' }))) as SvcError).error).toBe('InvalidResponse')
  })

  it('refuses bad options synchronously', () => {
    expect(() => createSvcClient({ baseUrl: 'not a url', appDid, serviceDid: SERVICE_DID, privateKeyHex: '00'.repeat(32), alg: 'ES256K' })).toThrow(/baseUrl/)
    expect(() => createSvcClient({ baseUrl, appDid: 'app', serviceDid: SERVICE_DID, privateKeyHex: '00'.repeat(32), alg: 'ES256K' })).toThrow(/appDid/)
    expect(() => createSvcClient({ baseUrl, appDid, serviceDid: SERVICE_DID, privateKeyHex: 'abc', alg: 'ES256K' })).toThrow(/32 bytes/)
    expect(() => createSvcClient({ baseUrl, appDid, serviceDid: SERVICE_DID } as never)).toThrow(/exactly one/)
    const key = { baseUrl, appDid, serviceDid: SERVICE_DID, privateKeyHex: '11'.repeat(32), alg: 'ES256K' as const }
    // a scalar outside the curve's range, a token the service would refuse to accept, a timeout no timer takes
    expect(() => createSvcClient({ ...key, privateKeyHex: 'ff'.repeat(32) })).toThrow(/out of range/)
    expect(() => createSvcClient({ ...key, jwtExpiresInSeconds: 600 })).toThrow(/jwtExpiresInSeconds/)
    expect(() => createSvcClient({ ...key, jwtExpiresInSeconds: 0 })).toThrow(/jwtExpiresInSeconds/)
    expect(() => createSvcClient({ ...key, requestTimeoutMs: Infinity })).toThrow(/requestTimeoutMs/)
    // credentials in the URL (fetch throws on them), a query or a fragment (they drop the base's path)
    expect(() => createSvcClient({ ...key, baseUrl: 'https://user:pass@svc.example.com' })).toThrow(/user name or password/)
    expect(() => createSvcClient({ ...key, baseUrl: 'https://svc.example.com/api?x=1' })).toThrow(/query or a fragment/)
    expect(() => createSvcClient({ ...key, baseUrl: 'https://svc.example.com/api#x' })).toThrow(/query or a fragment/)
    expect(() => createSvcClient(key)).not.toThrow()
  })

  it('a redirect is not followed (it would resend the single-use JWT elsewhere, a POST as a GET): a permanent HttpError naming it', async () => {
    script = [{ status: 302, headers: { location: `${baseUrl}/elsewhere` } }]
    const refused = (await rejection(client.call('network.svc.payment.initiate', { product: 'x' }))) as SvcError
    expect({ status: refused.status, error: refused.error, transient: refused.transient }).toEqual({ status: 302, error: 'HttpError', transient: false })
    expect(refused.message).toMatch(/redirected \(HTTP 302 to .*\/elsewhere\); .*check baseUrl/)
    expect(seen).toHaveLength(1)
  })

  it('an unknown method is refused before any request, inherited names too; a JSON array is no answer', async () => {
    for (const name of ['toString', 'constructor', 'money.svc.nope']) await expect(client.call(name as never, undefined as never)).rejects.toThrow(TypeError)
    expect(seen).toHaveLength(0)
    script = [ok([])]
    expect(((await rejection(client.getPaymentStatus({ token: 't' }))) as SvcError).error).toBe('InvalidResponse')
  })
})
