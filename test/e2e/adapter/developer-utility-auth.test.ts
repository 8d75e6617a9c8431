/**
 * The checks the three event utility routes share, in their documented order (docs/events.md, "Developer utility
 * routes"): API key form and existence (401 Unauthorized) → app given (400 AppRequired for the delivery log; test-event
 * and redrive take the key's app) → key bound to that app and
 * environment (Unauthorized) → live, for test-event only (403 LiveDeveloperActionUnsupported) → permission
 * (Unauthorized) → configuration exists (404 AppConfigNotFound) → the route's own errors. Every response has a
 * Svc-Request-Id and every call, failures included, is in the request log once, with the key's display prefix only.
 */
import { randomBytes } from 'node:crypto'
import { hashApiKey, revokeApiKey } from '@svc/apps'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, GET_CONFIG, httpRequest, readRequestLog, updateConfig, type HttpResult } from './helpers'
import { ALL_PERMISSIONS, ATM_PATH, listDeliveries, redrive, TEST_EVENT_PATH, testEvent } from './events-helpers'

let stack: TestStack
let app: TestApp
let key: string
let liveKey: string

beforeAll(async () => {
  stack = await startStack('dev-utility-auth', { workers: false })
  app = await stack.newApp({ environments: ['test', 'live'] })
  expectOk(await updateConfig(stack, app, { environment: 'test', webhookUrl: 'https://93.184.216.34/hook' }))
  expectOk(await updateConfig(stack, app, { environment: 'live', webhookUrl: 'https://93.184.216.34/live-hook' }))
  key = await app.apiKey('test', ALL_PERMISSIONS)
  liveKey = await app.apiKey('live', ALL_PERMISSIONS)
})
afterAll(async () => {
  await stack?.stop()
})

type Query = Record<string, string | string[] | undefined>
interface Route {
  name: string
  method: 'GET' | 'POST'
  path: string
  permission: string
  call(query: Query, headers?: Record<string, string>): Promise<HttpResult>
}

const ROUTES: Route[] = [
  { name: 'POST test-event', method: 'POST', path: TEST_EVENT_PATH, permission: 'webhook.test.write', call: (q, h) => testEvent(stack, q, h) },
  { name: 'GET deliveries', method: 'GET', path: ATM_PATH, permission: 'webhook.deliveries.read', call: (q, h) => listDeliveries(stack, q, h) },
  {
    name: 'POST redrive',
    method: 'POST',
    path: ATM_PATH,
    permission: 'webhook.deliveries.redrive',
    call: (q, h) => redrive(stack, q, { status: 'failed' }, h),
  },
]

const prefixOf = (k: string) => k.slice(0, 'svc_rk_test_'.length + 6)
const q = (): Query => ({ app: app.did, environment: 'test' })

/** The response's single request-log entry. */
async function expectLogged(
  res: HttpResult,
  route: Route,
  where: { environment: 'test' | 'live' | null; appDid: string | null },
  expected: { status: number; errorCode: string | null; keyPrefix: string | null },
  secret?: string,
): Promise<void> {
  const entries = await readRequestLog(stack, where)
  expect(entries.filter((e) => e.requestId === res.requestId)).toEqual([
    {
      requestId: res.requestId,
      status: expected.status,
      errorCode: expected.errorCode,
      path: route.path,
      keyPrefix: expected.keyPrefix,
      environment: where.environment,
      appDid: where.appDid,
      method: route.method,
    },
  ])
  if (secret) {
    expect(JSON.stringify(entries)).not.toContain(secret)
    expect(JSON.stringify(await stack.models.RequestLog.find({}).lean())).not.toContain(secret)
  }
}

describe.each(ROUTES)('$name', (route) => {
  it('a key holding the permission succeeds, and the call is logged; no cache keeps its answer, nor a refusal', async () => {
    const res = await route.call(q(), bearer(key))
    expectOk(res)
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect((await route.call(q())).headers.get('cache-control')).toBe('no-store')
    await expectLogged(res, route, { environment: 'test', appDid: app.did }, { status: 200, errorCode: null, keyPrefix: prefixOf(key) }, key)
  })

  it('a key holding only this permission succeeds', async () => {
    const only = await app.apiKey('test', [route.permission])
    expectOk(await route.call(q(), bearer(only)))
  })

  it('no Authorization header is 401 Unauthorized, logged without a key', async () => {
    const res = await route.call(q())
    expectError(res, 401, 'Unauthorized')
    await expectLogged(res, route, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: null })
  })

  it.each([
    ['garbage', 'Bearer garbage', /not a restricted API key/],
    ['a Basic credential', 'Basic dXNlcjpwYXNz', /must be `Bearer <API key>`/],
    ['an unknown environment key', `Bearer svc_rk_prod_${'a'.repeat(32)}`, /not a restricted API key/],
    ['a key cut short', 'Bearer svc_rk_test_nope', /malformed API key: .*copy it whole/],
  ])('%s is 401 Unauthorized', async (_label, authorization, message) => {
    const res = await route.call(q(), { authorization })
    expectError(res, 401, 'Unauthorized', message)
    await expectLogged(res, route, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: null })
  })

  it('a whsec_ webhook signing secret is 401 Unauthorized, never echoed or logged', async () => {
    const secret = `whsec_${randomBytes(32).toString('base64')}`
    const res = await route.call(q(), bearer(secret))
    expectError(res, 401, 'Unauthorized', /webhook signing secret/)
    expect(res.text).not.toContain(secret)
    await expectLogged(res, route, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: null }, secret)
  })

  it('a service-auth JWT is 401 Unauthorized', async () => {
    expectError(await route.call(q(), bearer(await app.jwt(GET_CONFIG))), 401, 'Unauthorized')
  })

  it('an unknown well-formed key is 401 Unauthorized, logged with its display prefix only', async () => {
    const unknown = `svc_rk_test_${randomBytes(24).toString('base64url')}`
    const res = await route.call(q(), bearer(unknown))
    expectError(res, 401, 'Unauthorized')
    expect(res.text).not.toContain(unknown)
    await expectLogged(res, route, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: prefixOf(unknown) }, unknown)
  })

  it('a revoked key is 401 Unauthorized', async () => {
    const revoked = await app.apiKey('test', ALL_PERMISSIONS)
    expectOk(await route.call(q(), bearer(revoked)))
    const doc = await stack.models.ApiKey.findOne({ keyHash: hashApiKey(revoked) }).lean()
    expect(await revokeApiKey({ models: stack.models }, doc!.keyId)).toBe(true)
    expectError(await route.call(q(), bearer(revoked)), 401, 'Unauthorized')
  })

  it("another app's key is 401 Unauthorized, and says nothing of that app", async () => {
    const other = await stack.newApp()
    const otherKey = await other.apiKey('test', ALL_PERMISSIONS)
    const res = await route.call(q(), bearer(otherKey))
    expectError(res, 401, 'Unauthorized')
    expect(res.text).not.toContain(other.did)
  })

  it('a test key with environment=live is 401 Unauthorized (the binding comes before the live check)', async () => {
    const res = await route.call({ app: app.did, environment: 'live' }, bearer(key))
    expectError(res, 401, 'Unauthorized', /test environment/)
    await expectLogged(res, route, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: prefixOf(key) })
  })

  it('a live key with environment=test is 401 Unauthorized', async () => {
    expectError(await route.call(q(), bearer(liveKey)), 401, 'Unauthorized', /live environment/)
  })

  it('a key without the permission is 401 Unauthorized naming it', async () => {
    const without = await app.apiKey('test', ALL_PERMISSIONS.filter((p) => p !== route.permission))
    const res = await route.call(q(), bearer(without))
    expectError(res, 401, 'Unauthorized', new RegExp(route.permission.replace(/\./g, '\\.')))
    await expectLogged(res, route, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: prefixOf(without) })
  })

  if (route.permission === 'webhook.deliveries.read') {
    it('no app with a valid key is 400 AppRequired; with an unknown key 401 (the key first)', async () => {
      const res = await route.call({ environment: 'test' }, bearer(key))
      expectError(res, 400, 'AppRequired')
      await expectLogged(res, route, { environment: 'test', appDid: null }, { status: 400, errorCode: 'AppRequired', keyPrefix: prefixOf(key) })
      expectError(await route.call({ app: '' }, bearer(key)), 400, 'AppRequired')
      expectError(await route.call({ environment: 'test' }, bearer(`svc_rk_test_${randomBytes(24).toString('base64url')}`)), 401, 'Unauthorized')
    })
  } else {
    it('no app with a valid key acts on the app the key is bound to (the contract lists no AppRequired here); with an unknown key 401', async () => {
      const res = await route.call({ environment: 'test' }, bearer(key))
      expectOk(res)
      // logged under the app the key established, so an operator reading that app's log finds it
      await expectLogged(res, route, { environment: 'test', appDid: app.did }, { status: 200, errorCode: null, keyPrefix: prefixOf(key) })
      expectOk(await route.call({ app: '' }, bearer(key)))
      expectError(await route.call({ environment: 'test' }, bearer(`svc_rk_test_${randomBytes(24).toString('base64url')}`)), 401, 'Unauthorized')
    })
  }

  it('a deleted configuration is 404 AppConfigNotFound', async () => {
    const gone = await stack.newApp()
    const goneKey = await gone.apiKey('test', ALL_PERMISSIONS)
    await stack.models.AppEnvironment.deleteOne({ appDid: gone.did, environment: 'test' })
    const res = await route.call({ app: gone.did }, bearer(goneKey))
    expectError(res, 404, 'AppConfigNotFound')
    await expectLogged(res, route, { environment: 'test', appDid: gone.did }, { status: 404, errorCode: 'AppConfigNotFound', keyPrefix: prefixOf(goneKey) })
  })

  it('a repeated app or environment is 400 InvalidRequest with a key, 401 without one', async () => {
    expectError(await route.call({ app: [app.did, app.did] }, bearer(key)), 400, 'InvalidRequest', /app/)
    expectError(await route.call({ app: app.did, environment: ['test', 'test'] }, bearer(key)), 400, 'InvalidRequest', /environment/)
    expectError(await route.call({ app: [app.did, app.did] }), 401, 'Unauthorized')
    // authentication comes first: a key never issued, or another app's, is told Unauthorized, not how its query is wrong
    const otherKey = await (await stack.newApp()).apiKey('test', ALL_PERMISSIONS)
    expectError(await route.call({ app: [app.did, app.did] }, bearer(`svc_rk_test_${'A'.repeat(32)}`)), 401, 'Unauthorized')
    expectError(await route.call({ app: [app.did, app.did] }, bearer(otherKey)), 401, 'Unauthorized')
    expectError(await route.call({ app: app.did, environment: ['test', 'test'] }, bearer(otherKey)), 401, 'Unauthorized')
  })

  it('without environment, the key environment is used', async () => {
    expectOk(await route.call({ app: app.did }, bearer(key)))
  })
})

describe('live keys', () => {
  it('test-event with a live key is 403 LiveDeveloperActionUnsupported, with or without environment=live', async () => {
    for (const query of [{ app: app.did, environment: 'live' }, { app: app.did }]) {
      const res = await testEvent(stack, query, bearer(liveKey))
      expectError(res, 403, 'LiveDeveloperActionUnsupported')
      await expectLogged(res, ROUTES[0]!, { environment: 'live', appDid: app.did }, { status: 403, errorCode: 'LiveDeveloperActionUnsupported', keyPrefix: prefixOf(liveKey) })
    }
    expect(await stack.events.Delivery.countDocuments({ appDid: app.did, environment: 'live' })).toBe(0)
  })

  it('the live refusal comes before the permission check', async () => {
    const readOnly = await app.apiKey('live', ['webhook.deliveries.read'])
    expectError(await testEvent(stack, { app: app.did }, bearer(readOnly)), 403, 'LiveDeveloperActionUnsupported')
  })

  it('a live key lists and redrives live deliveries', async () => {
    expect(expectOk(await listDeliveries(stack, { app: app.did, environment: 'live' }, bearer(liveKey)))).toEqual({ deliveries: [] })
    expect(expectOk(await redrive(stack, { app: app.did }, { status: 'failed' }, bearer(liveKey)))).toEqual({ ok: true, queued: 0 })
  })
})

describe("the routes' own errors come after the key's checks", () => {
  it('bad list parameters with an unknown key are 401, with a key lacking the permission 401, with a good key 400', async () => {
    const unknown = `svc_rk_test_${randomBytes(24).toString('base64url')}`
    const noRead = await app.apiKey('test', ['webhook.test.write'])
    expectError(await listDeliveries(stack, { ...q(), limit: 'abc' }, bearer(unknown)), 401, 'Unauthorized')
    expectError(await listDeliveries(stack, { ...q(), status: 'nope' }, bearer(noRead)), 401, 'Unauthorized')
    expectError(await listDeliveries(stack, { ...q(), limit: 'abc' }, bearer(key)), 400, 'InvalidRequest', /limit/)
  })

  it('a malformed redrive body with an unknown key is 401, with a key lacking the permission 401, with a good key 400', async () => {
    const unknown = `svc_rk_test_${randomBytes(24).toString('base64url')}`
    const noRedrive = await app.apiKey('test', ['webhook.deliveries.read'])
    expectError(await redrive(stack, q(), '{not json', bearer(unknown)), 401, 'Unauthorized')
    expectError(await redrive(stack, q(), '{not json', bearer(noRedrive)), 401, 'Unauthorized')
    expectError(await redrive(stack, q(), '{not json', bearer(key)), 400, 'InvalidRequest', /JSON/)
  })

  it('test-event for an app without a channel: 401 for a bad key, 404 without configuration, then 400 WebhookNotConfigured', async () => {
    const bare = await stack.newApp()
    const bareKey = await bare.apiKey('test', ['webhook.test.write'])
    expectError(await testEvent(stack, { app: bare.did }, bearer(`svc_rk_test_${randomBytes(24).toString('base64url')}`)), 401, 'Unauthorized')
    const res = await testEvent(stack, { app: bare.did }, bearer(bareKey))
    expectError(res, 400, 'WebhookNotConfigured')
    await expectLogged(res, ROUTES[0]!, { environment: 'test', appDid: bare.did }, { status: 400, errorCode: 'WebhookNotConfigured', keyPrefix: prefixOf(bareKey) })
    await stack.models.AppEnvironment.deleteOne({ appDid: bare.did, environment: 'test' })
    expectError(await testEvent(stack, { app: bare.did }, bearer(bareKey)), 404, 'AppConfigNotFound')
  })
})

describe('Svc-Request-Id and the request log', () => {
  it('each response of every route has its own id, and each call is logged exactly once', async () => {
    const calls: HttpResult[] = []
    for (const route of ROUTES) {
      calls.push(await route.call(q(), bearer(key)))
      calls.push(await route.call(q()))
    }
    const ids = calls.map((r) => r.requestId)
    for (const id of ids) expect(id).toMatch(/^req_[0-9a-f]{32}$/)
    expect(new Set(ids).size).toBe(calls.length)
    const log = await readRequestLog(stack, { environment: 'test', appDid: app.did })
    for (const res of calls) {
      expect(log.filter((e) => e.requestId === res.requestId).map((e) => ({ status: e.status, errorCode: e.errorCode }))).toEqual([
        { status: res.status, errorCode: res.body?.error ?? null },
      ])
    }
  })

  it('a route spelled percent-encoded (/%61pi/…) is logged as any call of it', async () => {
    const res = await httpRequest(`${stack.checkoutUrl}/%61pi/app/developer/config?app=${encodeURIComponent(app.did)}&environment=test`, { headers: bearer(key) })
    expect(res.status).toBe(200)
    const log = await readRequestLog(stack, { environment: 'test', appDid: app.did })
    expect(log.filter((e) => e.requestId === res.requestId)).toEqual([expect.objectContaining({ status: 200, method: 'GET' })])
  })

  it('no input makes a 5xx', async () => {
    const odd: Query[] = [
      { app: app.did, limit: '99999999999999999999' },
      { app: app.did, status: ['failed', 'failed'] },
      { app: app.did, environment: 'prod' },
      { app: 'not a did' },
      { app: app.did, limit: '-1' },
      { app: 'did:plc:a\u0000b', environment: 'te\u0000st' },
    ]
    for (const route of ROUTES) {
      for (const query of odd) {
        const res = await route.call(query, bearer(key))
        expect(res.status).toBeLessThan(500)
        expect(typeof res.body).toBe('object')
      }
    }
  })

  it('a call that names no DID (a NUL character, say) is logged, under no app', async () => {
    const res = await listDeliveries(stack, { app: 'did:plc:a\u0000b', environment: 'test' })
    expectError(res, 401, 'Unauthorized')
    await expectLogged(res, ROUTES[1]!, { environment: 'test', appDid: null }, { status: 401, errorCode: 'Unauthorized', keyPrefix: null })
  })
})
