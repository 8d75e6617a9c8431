/**
 * The XRPC edge itself: verbs, unknown / retired / planned NSIDs, lexicon validation (before auth),
 * and the Svc-Request-Id header on every response.
 */
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, freshConfig, GET_CONFIG, UPDATE_CONFIG, xrpcGet, xrpcPost } from './helpers'

let stack: TestStack
let app: TestApp

beforeAll(async () => {
  stack = await startStack('xrpc-edge')
  app = await stack.newApp()
})
afterAll(async () => {
  await stack.stop()
})

describe('HTTP verbs', () => {
  it('GET on a procedure is 400 InvalidRequest', async () => {
    const res = await xrpcGet(stack, UPDATE_CONFIG, { environment: 'test' }, bearer(await app.jwt(UPDATE_CONFIG)))
    expectError(res, 400, 'InvalidRequest', /POST/)
  })

  it('POST on a query is 400 InvalidRequest', async () => {
    const res = await xrpcPost(stack, `${GET_CONFIG}?environment=test`, { environment: 'test' }, bearer(await app.jwt(GET_CONFIG)))
    expectError(res, 400, 'InvalidRequest', /GET/)
  })

  it('POST on a query without a body is 400 InvalidRequest too', async () => {
    const res = await xrpcPost(stack, `${GET_CONFIG}?environment=test`, undefined, bearer(await app.jwt(GET_CONFIG)))
    expectError(res, 400, 'InvalidRequest', /GET/)
  })

  it.each(['PUT', 'DELETE', 'PATCH', 'OPTIONS'])('%s on a procedure is 400 InvalidRequest', async (method) => {
    const res = await fetch(`${stack.apiUrl}/xrpc/${UPDATE_CONFIG}`, {
      method,
      headers: { 'content-type': 'application/json', ...bearer(await app.jwt(UPDATE_CONFIG)) },
      body: method === 'OPTIONS' ? undefined : JSON.stringify({ environment: 'test' }),
    })
    const body = (await res.json()) as { error?: string }
    expect({ status: res.status, error: body.error }).toEqual({ status: 400, error: 'InvalidRequest' })
    expect(res.headers.get('svc-request-id')).toMatch(/^req_/)
  })
})

describe('NSIDs that are not served', () => {
  it.each(['money.svc.app.doesNotExist', 'com.example.unknown.method', 'not-an-nsid', 'lex:money.svc.payment.registerPayerRecord', 'network.svc.payment.lookup%23main'])('unknown NSID %s is 501 MethodNotImplemented', async (nsid) => {
    const get = await xrpcGet(stack, nsid, {}, bearer(await app.jwt(nsid)))
    expectError(get, 501, 'MethodNotImplemented')
    const post = await xrpcPost(stack, nsid, {}, bearer(await app.jwt(nsid)))
    expectError(post, 501, 'MethodNotImplemented')
  })

  it.each([
    ['network.svc.payment.lookup', 'GET'],
    ['money.svc.payment.registerPayerRecord', 'POST'],
    ['money.svc.event.receive', 'POST'],
  ] as const)('retired %s is 501 MethodNotImplemented (with its own verb, with the other verb, without auth)', async (nsid, verb) => {
    const auth = bearer(await app.jwt(nsid))
    const right = verb === 'GET' ? await xrpcGet(stack, nsid, {}, auth) : await xrpcPost(stack, nsid, {}, auth)
    expectError(right, 501, 'MethodNotImplemented', /retired/)
    const wrong = verb === 'GET' ? await xrpcPost(stack, nsid, {}, auth) : await xrpcGet(stack, nsid, {}, auth)
    expectError(wrong, 501, 'MethodNotImplemented', /retired/)
    const anonymous = verb === 'GET' ? await xrpcGet(stack, nsid) : await xrpcPost(stack, nsid, {})
    expectError(anonymous, 501, 'MethodNotImplemented', /retired/)
  })

  it('a planned query called correctly (money.svc.payment.listSubscriptions) is 501 MethodNotImplemented', async () => {
    const nsid = 'money.svc.payment.listSubscriptions'
    const res = await xrpcGet(stack, nsid, {}, bearer(await app.jwt(nsid)))
    expectError(res, 501, 'MethodNotImplemented', /money\.svc\.payment\.listSubscriptions/)
  })

  it('a planned procedure called correctly (tickets.svc.checkInTicket) is 501 MethodNotImplemented', async () => {
    const nsid = 'tickets.svc.checkInTicket'
    const res = await xrpcPost(stack, nsid, { ticketToken: 'tok', checkInListId: 'list_1' }, bearer(await app.jwt(nsid)))
    expectError(res, 501, 'MethodNotImplemented')
  })

  it('a planned method with the wrong verb is still 400 InvalidRequest', async () => {
    const nsid = 'money.svc.payment.listSubscriptions'
    const res = await xrpcPost(stack, nsid, {}, bearer(await app.jwt(nsid)))
    expectError(res, 400, 'InvalidRequest')
  })

  it('the app money.svc.event.receiveEvent is not served here: 501 MethodNotImplemented', async () => {
    const nsid = 'money.svc.event.receiveEvent'
    const res = await xrpcPost(
      stack,
      nsid,
      { id: 'whd_1', type: 'app.webhook.test', createdAt: new Date().toISOString(), apiVersion: '2026-06', environment: 'test', data: {} },
      bearer(await app.jwt(nsid)),
    )
    expectError(res, 501, 'MethodNotImplemented')
  })
})

describe('lexicon validation', () => {
  it('getConfig without environment is 400 InvalidRequest naming environment', async () => {
    const res = await xrpcGet(stack, GET_CONFIG, {}, bearer(await app.jwt(GET_CONFIG)))
    expectError(res, 400, 'InvalidRequest', /environment/)
  })

  it('getConfig with environment given twice is 400 InvalidRequest naming environment', async () => {
    const res = await xrpcGet(stack, GET_CONFIG, { environment: ['test', 'live'] }, bearer(await app.jwt(GET_CONFIG)))
    expectError(res, 400, 'InvalidRequest', /environment/)
  })

  it('getConfig with an environment that is neither test nor live is 400 InvalidRequest naming environment', async () => {
    const res = await xrpcGet(stack, GET_CONFIG, { environment: 'staging' }, bearer(await app.jwt(GET_CONFIG)))
    expectError(res, 400, 'InvalidRequest', /environment/)
  })

  it('updateConfig without environment is 400 InvalidRequest naming environment', async () => {
    const res = await xrpcPost(stack, UPDATE_CONFIG, { modules: { tickets: true } }, bearer(await app.jwt(UPDATE_CONFIG)))
    expectError(res, 400, 'InvalidRequest', /environment/)
  })

  it('updateConfig with a non-boolean modules.tickets is 400 InvalidRequest naming tickets', async () => {
    const res = await xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', modules: { tickets: 'yes' } }, bearer(await app.jwt(UPDATE_CONFIG)))
    expectError(res, 400, 'InvalidRequest', /modules.*tickets/)
  })

  it('updateConfig with a non-boolean ticketing.qrPasses is 400 InvalidRequest naming qrPasses', async () => {
    const res = await xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', ticketing: { qrPasses: 1 } }, bearer(await app.jwt(UPDATE_CONFIG)))
    expectError(res, 400, 'InvalidRequest', /qrPasses/)
  })

  it('updateConfig with a malformed webhookUrl is 400 InvalidRequest naming webhookUrl', async () => {
    const res = await xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', webhookUrl: 'not a url' }, bearer(await app.jwt(UPDATE_CONFIG)))
    expectError(res, 400, 'InvalidRequest', /webhookUrl/)
  })

  it('updateConfig with a non-string webhookUrl is 400 InvalidRequest naming webhookUrl', async () => {
    const res = await xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', webhookUrl: 42 }, bearer(await app.jwt(UPDATE_CONFIG)))
    expectError(res, 400, 'InvalidRequest', /webhookUrl/)
  })

  it('updateConfig with a body that is not JSON is 400 InvalidRequest', async () => {
    const res = await xrpcPost(stack, UPDATE_CONFIG, undefined, bearer(await app.jwt(UPDATE_CONFIG)), {
      body: '{"environment": "test",',
      contentType: 'application/json',
    })
    expectError(res, 400, 'InvalidRequest', /JSON/i)
  })

  it('updateConfig with a text/plain body is 400 InvalidRequest', async () => {
    const res = await xrpcPost(stack, UPDATE_CONFIG, undefined, bearer(await app.jwt(UPDATE_CONFIG)), {
      body: 'environment=test',
      contentType: 'text/plain',
    })
    expectError(res, 400, 'InvalidRequest')
  })

  it('a body over the size limit is 413 PayloadTooLarge', async () => {
    const res = await xrpcPost(stack, UPDATE_CONFIG, undefined, bearer(await app.jwt(UPDATE_CONFIG)), {
      body: JSON.stringify({ environment: 'test', webhookUrl: `https://93.184.216.34/${'a'.repeat(300 * 1024)}` }),
      contentType: 'application/json',
    })
    expectError(res, 413, 'PayloadTooLarge')
  })

  it('updateConfig without a body is 400 InvalidRequest', async () => {
    const res = await xrpcPost(stack, UPDATE_CONFIG, undefined, bearer(await app.jwt(UPDATE_CONFIG)))
    expectError(res, 400, 'InvalidRequest', /body/)
  })

  it.each([
    ['null', 'null'],
    ['an array', '[]'],
    ['a string', '"test"'],
  ])('updateConfig with %s as the JSON body is 400 InvalidRequest', async (_label, raw) => {
    const res = await xrpcPost(stack, UPDATE_CONFIG, undefined, bearer(await app.jwt(UPDATE_CONFIG)), { body: raw, contentType: 'application/json' })
    expectError(res, 400, 'InvalidRequest')
  })

  it('validation happens before auth: bad params and no Authorization is 400 InvalidRequest', async () => {
    const get = await xrpcGet(stack, GET_CONFIG, {})
    expectError(get, 400, 'InvalidRequest', /environment/)
    const post = await xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', modules: { tickets: 'yes' } })
    expectError(post, 400, 'InvalidRequest', /tickets/)
    const garbage = await xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', webhookUrl: 'nope' }, { authorization: 'Bearer garbage' })
    expectError(garbage, 400, 'InvalidRequest', /webhookUrl/)
  })

  it('a failed validation does not burn the JWT: the same token then works on a valid call', async () => {
    const token = await app.jwt(GET_CONFIG)
    expectError(await xrpcGet(stack, GET_CONFIG, {}, bearer(token)), 400, 'InvalidRequest')
    expect(expectOk(await xrpcGet(stack, GET_CONFIG, { environment: 'test' }, bearer(token)))).toEqual(freshConfig(app.did, 'test'))
  })
})

describe('Svc-Request-Id', () => {
  it('is on success, on every kind of error, and differs between requests', async () => {
    const responses = [
      await xrpcGet(stack, GET_CONFIG, { environment: 'test' }, bearer(await app.jwt(GET_CONFIG))), // 200
      await xrpcGet(stack, GET_CONFIG, { environment: 'test' }), // 401
      await xrpcGet(stack, GET_CONFIG, {}), // 400
      await xrpcGet(stack, 'money.svc.nope.nothing'), // 501
      await xrpcGet(stack, 'network.svc.payment.lookup'), // 501 retired
      await xrpcGet(stack, GET_CONFIG, { environment: 'live' }, bearer(await app.jwt(GET_CONFIG))), // 404
    ]
    expect(responses.map((r) => r.status)).toEqual([200, 401, 400, 501, 501, 404])
    for (const r of responses) expect(r.requestId).toMatch(/^req_[0-9a-f]{32}$/)
    expect(new Set(responses.map((r) => r.requestId)).size).toBe(responses.length)
    // an app's answers (its configuration, a signing secret) are kept by no cache
    for (const r of responses) expect(r.headers.get('cache-control')).toBe('no-store')
  })

  it('is generated by the service, never taken from the client', async () => {
    const res = await xrpcGet(stack, GET_CONFIG, { environment: 'test' }, { 'svc-request-id': 'req_client', 'request-id': 'client', 'x-request-id': 'client' })
    expectError(res, 401, 'AuthMissing')
    expect(res.requestId).not.toContain('client')
  })

  it('is on the health route and on unknown paths', async () => {
    const health = await fetch(`${stack.apiUrl}/xrpc/_health`)
    expect(health.status).toBe(200)
    expect(health.headers.get('svc-request-id')).toMatch(/^req_/)
    const missing = await fetch(`${stack.apiUrl}/nothing/here`)
    const body = (await missing.json()) as { error?: string }
    expect({ status: missing.status, error: body.error }).toEqual({ status: 404, error: 'NotFound' })
    expect(missing.headers.get('svc-request-id')).toMatch(/^req_/)
  })
})
