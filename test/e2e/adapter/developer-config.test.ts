/**
 * GET {checkout_url}/api/app/developer/config with a restricted API key: the developer configuration,
 * every refusal (401 Unauthorized, 400 AppRequired, 404 AppConfigNotFound), Svc-Request-Id on every
 * response, and every call (failures included) in the request log, without the key itself.
 */
import { randomBytes } from 'node:crypto'
import { hashApiKey, revokeApiKey } from '@svc/apps'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, GET_CONFIG, httpRequest, readRequestLog, updateConfig, type HttpResult, type RequestLogEntry } from './helpers'

let stack: TestStack
let app: TestApp
let key: string

beforeAll(async () => {
  stack = await startStack('developer-config')
  app = await stack.newApp({ environments: ['test', 'live'] })
  key = await app.apiKey('test')
})
afterAll(async () => {
  await stack.stop()
})

const PATH = '/api/app/developer/config'

async function developerConfig(query: Record<string, string | string[]>, headers: Record<string, string> = {}): Promise<HttpResult> {
  const url = new URL(PATH, stack.checkoutUrl)
  for (const [k, v] of Object.entries(query)) for (const one of Array.isArray(v) ? v : [v]) url.searchParams.append(k, one)
  return httpRequest(url.toString(), { headers })
}

function devConfig(appDid: string, environment: 'test' | 'live', over: { tickets?: boolean; configured?: boolean } = {}) {
  return {
    appDid,
    environment,
    status: 'active',
    webhook: { configured: over.configured ?? false, paused: false, disabled: null },
    modules: { payments: true, products: false, tickets: over.tickets ?? false },
  }
}

/** The request log entry of this response: right status and error code, the key's display prefix only. */
async function expectLogged(
  res: HttpResult,
  where: { environment: 'test' | 'live' | null; appDid: string | null },
  expected: { status: number; errorCode: string | null; keyPrefix: string | null },
  secret?: string,
): Promise<RequestLogEntry> {
  expect(res.requestId).toMatch(/^req_[0-9a-f]{32}$/)
  const entries = await readRequestLog(stack, where)
  const entry = entries.find((e) => e.requestId === res.requestId)
  expect(entry).toEqual({
    requestId: res.requestId,
    status: expected.status,
    errorCode: expected.errorCode,
    path: PATH,
    keyPrefix: expected.keyPrefix,
    environment: where.environment,
    appDid: where.appDid,
    method: 'GET',
  })
  expect(entries.filter((e) => e.requestId === res.requestId)).toHaveLength(1)
  if (secret) {
    expect(JSON.stringify(entries)).not.toContain(secret)
    const stored = await stack.models.RequestLog.find({}).lean()
    expect(JSON.stringify(stored)).not.toContain(secret)
  }
  return entry!
}

const prefixOf = (k: string) => k.slice(0, 'svc_rk_test_'.length + 6)

describe('success', () => {
  it('returns exactly the developer configuration, and the call is logged', async () => {
    const res = await developerConfig({ app: app.did, environment: 'test' }, bearer(key))
    expect(expectOk(res)).toEqual(devConfig(app.did, 'test'))
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    await expectLogged(res, { environment: 'test', appDid: app.did }, { status: 200, errorCode: null, keyPrefix: prefixOf(key) }, key)
  })

  it('without environment, the key environment is used', async () => {
    const res = await developerConfig({ app: app.did }, bearer(key))
    expect(expectOk(res)).toEqual(devConfig(app.did, 'test'))
    await expectLogged(res, { environment: 'test', appDid: app.did }, { status: 200, errorCode: null, keyPrefix: prefixOf(key) }, key)
  })

  it('reflects what the app configured with updateConfig', async () => {
    const other = await stack.newApp()
    const otherKey = await other.apiKey('test')
    expectOk(await updateConfig(stack, other, { environment: 'test', modules: { tickets: true }, webhookUrl: 'https://93.184.216.34/hook' }))
    const res = await developerConfig({ app: other.did, environment: 'test' }, bearer(otherKey))
    expect(expectOk(res)).toEqual(devConfig(other.did, 'test', { tickets: true, configured: true }))
  })

  it('a key holding all four permissions reads the configuration', async () => {
    const all = await app.apiKey('test', ['app.config.read', 'webhook.test.write', 'webhook.deliveries.read', 'webhook.deliveries.redrive'])
    expect(expectOk(await developerConfig({ app: app.did, environment: 'test' }, bearer(all)))).toEqual(devConfig(app.did, 'test'))
  })

  it('a live key reads the live configuration', async () => {
    const live = await app.apiKey('live')
    const res = await developerConfig({ app: app.did, environment: 'live' }, bearer(live))
    expect(expectOk(res)).toEqual(devConfig(app.did, 'live'))
    await expectLogged(res, { environment: 'live', appDid: app.did }, { status: 200, errorCode: null, keyPrefix: prefixOf(live) }, live)
  })
})

describe('401 Unauthorized', () => {
  const q = () => ({ app: app.did, environment: 'test' })

  it('no Authorization header', async () => {
    const res = await developerConfig(q())
    expectError(res, 401, 'Unauthorized')
    await expectLogged(res, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: null })
  })

  it.each([
    ['garbage', 'Bearer garbage'],
    ['an empty bearer', 'Bearer '],
    ['a Basic credential', 'Basic dXNlcjpwYXNz'],
    ['a too short key', 'Bearer svc_rk_test_short'],
    ['an unknown environment key', `Bearer svc_rk_prod_${'a'.repeat(32)}`],
  ])('%s', async (_label, authorization) => {
    const res = await developerConfig(q(), { authorization })
    expectError(res, 401, 'Unauthorized')
    await expectLogged(res, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: null })
  })

  it('a key without the Bearer scheme', async () => {
    const res = await developerConfig(q(), { authorization: key })
    expectError(res, 401, 'Unauthorized')
    expect(res.text).not.toContain(key)
  })

  it('a whsec_ webhook signing secret', async () => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`
    const res = await developerConfig(q(), bearer(secret))
    expectError(res, 401, 'Unauthorized', /webhook signing secret/)
    expect(res.text).not.toContain(secret)
    await expectLogged(res, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: null }, secret)
  })

  it('a service-auth JWT', async () => {
    const jwt = await app.jwt(GET_CONFIG)
    const res = await developerConfig(q(), bearer(jwt))
    expectError(res, 401, 'Unauthorized')
    await expectLogged(res, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: null }, jwt)
  })

  it('an unknown (well-formed) key', async () => {
    const unknown = `svc_rk_test_${randomBytes(24).toString('base64url')}`
    const res = await developerConfig(q(), bearer(unknown))
    expectError(res, 401, 'Unauthorized')
    expect(res.text).not.toContain(unknown)
    await expectLogged(res, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: prefixOf(unknown) }, unknown)
  })

  it('a key revoked directly in the database', async () => {
    const revoked = await app.apiKey('test')
    expectOk(await developerConfig(q(), bearer(revoked)))
    await stack.models.ApiKey.updateOne({ keyHash: hashApiKey(revoked) }, { $set: { revokedAt: new Date() } })
    const res = await developerConfig(q(), bearer(revoked))
    expectError(res, 401, 'Unauthorized')
    await expectLogged(res, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: prefixOf(revoked) }, revoked)
  })

  it('a key revoked with revokeApiKey', async () => {
    const revoked = await app.apiKey('test')
    expectOk(await developerConfig(q(), bearer(revoked)))
    const doc = await stack.models.ApiKey.findOne({ keyHash: hashApiKey(revoked) }).lean()
    expect(await revokeApiKey({ models: stack.models }, doc!.keyId)).toBe(true)
    const res = await developerConfig(q(), bearer(revoked))
    expectError(res, 401, 'Unauthorized')
  })

  it('a key of another app', async () => {
    const other = await stack.newApp()
    const otherKey = await other.apiKey('test')
    const res = await developerConfig(q(), bearer(otherKey))
    expectError(res, 401, 'Unauthorized')
    expect(res.text).not.toContain(other.did)
    await expectLogged(res, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: prefixOf(otherKey) }, otherKey)
  })

  it('a live key with environment=test', async () => {
    const live = await app.apiKey('live')
    const res = await developerConfig(q(), bearer(live))
    expectError(res, 401, 'Unauthorized')
    // logged in the environment of the key that was presented
    await expectLogged(res, { environment: 'live', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: prefixOf(live) }, live)
  })

  it('a test key with environment=live', async () => {
    const res = await developerConfig({ app: app.did, environment: 'live' }, bearer(key))
    expectError(res, 401, 'Unauthorized')
  })

  it('a key without app.config.read', async () => {
    const noRead = await app.apiKey('test', ['webhook.test.write', 'webhook.deliveries.read', 'webhook.deliveries.redrive'])
    const res = await developerConfig(q(), bearer(noRead))
    expectError(res, 401, 'Unauthorized', /app\.config\.read/)
    await expectLogged(res, { environment: 'test', appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: prefixOf(noRead) }, noRead)
  })
})

describe('400 AppRequired and 404 AppConfigNotFound', () => {
  it('missing app with a valid key is 400 AppRequired', async () => {
    const res = await developerConfig({ environment: 'test' }, bearer(key))
    expectError(res, 400, 'AppRequired')
    await expectLogged(res, { environment: 'test', appDid: null }, { status: 400, errorCode: 'AppRequired', keyPrefix: prefixOf(key) }, key)
  })

  it('an empty app with a valid key is 400 AppRequired', async () => {
    const res = await developerConfig({ app: '', environment: 'test' }, bearer(key))
    expectError(res, 400, 'AppRequired')
  })

  it('missing app with an invalid key is 401 Unauthorized (the key is checked first)', async () => {
    const res = await developerConfig({ environment: 'test' }, bearer(`svc_rk_test_${randomBytes(24).toString('base64url')}`))
    expectError(res, 401, 'Unauthorized')
  })

  it('a valid key whose app environment configuration was deleted is 404 AppConfigNotFound', async () => {
    const gone = await stack.newApp({ environments: ['test', 'live'] })
    const goneKey = await gone.apiKey('test')
    expectOk(await developerConfig({ app: gone.did, environment: 'test' }, bearer(goneKey)))
    await stack.models.AppEnvironment.deleteOne({ appDid: gone.did, environment: 'test' })
    const res = await developerConfig({ app: gone.did, environment: 'test' }, bearer(goneKey))
    expectError(res, 404, 'AppConfigNotFound')
    await expectLogged(res, { environment: 'test', appDid: gone.did }, { status: 404, errorCode: 'AppConfigNotFound', keyPrefix: prefixOf(goneKey) }, goneKey)
    // the live configuration is not offered instead
    expect(res.text).not.toContain('"live"')
  })
})

describe('Svc-Request-Id and the request log', () => {
  it('every response has its own Svc-Request-Id, and every call is logged once with it', async () => {
    const otherKey = await (await stack.newApp()).apiKey('test')
    const calls: [HttpResult, number, string | null][] = [
      [await developerConfig({ app: app.did, environment: 'test' }, bearer(key)), 200, null],
      [await developerConfig({ app: app.did, environment: 'test' }), 401, 'Unauthorized'],
      [await developerConfig({ app: app.did, environment: 'test' }, bearer(otherKey)), 401, 'Unauthorized'],
      [await developerConfig({ app: app.did, environment: 'test' }, bearer('whsec_abc')), 401, 'Unauthorized'],
    ]
    const ids = calls.map(([r]) => r.requestId)
    expect(new Set(ids).size).toBe(calls.length)
    const log = await readRequestLog(stack, { environment: 'test', appDid: app.did })
    for (const [res, status, errorCode] of calls) {
      expect({ status: res.status, error: res.body?.error ?? null }).toEqual({ status, error: errorCode })
      const entries = log.filter((e) => e.requestId === res.requestId)
      expect(entries.map((e) => ({ status: e.status, errorCode: e.errorCode }))).toEqual([{ status, errorCode }])
    }
    expect(JSON.stringify(log)).not.toContain(key)
    expect(JSON.stringify(log)).not.toContain(otherKey)
  })

  it('an unknown path under /api is 404 with a Svc-Request-Id', async () => {
    const res = await httpRequest(`${stack.checkoutUrl}/api/app/developer/nothing?app=${encodeURIComponent(app.did)}&environment=test`, {
      headers: bearer(key),
    })
    expect({ status: res.status, error: res.body?.error }).toEqual({ status: 404, error: 'NotFound' })
    expect(res.requestId).toMatch(/^req_[0-9a-f]{32}$/)
  })

  it('the request log is not readable with an API key or without a credential', async () => {
    for (const headers of [bearer(key), {}] as Record<string, string>[]) {
      const res = await fetch(stack.gatewayUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ query: '{ requestLog(environment: "test") { requestId } }' }),
      })
      const body = (await res.json()) as { error?: string }
      expect({ status: res.status, error: body.error }).toEqual({ status: 401, error: 'Unauthorized' })
    }
  })
})

describe('odd inputs never produce a 5xx', () => {
  it('app given twice with a valid key is a 4xx contract error, and is logged', async () => {
    const res = await developerConfig({ app: [app.did, app.did], environment: 'test' }, bearer(key))
    expectError(res, 400, 'InvalidRequest', /app/)
    const log = await readRequestLog(stack, { environment: 'test' })
    expect(log.filter((e) => e.requestId === res.requestId).map((e) => ({ status: e.status, errorCode: e.errorCode }))).toEqual([
      { status: 400, errorCode: 'InvalidRequest' },
    ])
  })

  it('app given twice without a key is 401 Unauthorized, and is still logged', async () => {
    const res = await developerConfig({ app: [app.did, 'did:key:zOther'], environment: 'test' })
    expectError(res, 401, 'Unauthorized')
    await expectLogged(res, { environment: 'test', appDid: null }, { status: 401, errorCode: 'Unauthorized', keyPrefix: null })
  })

  it('environment given twice without a key is 401 Unauthorized, and is still logged', async () => {
    const res = await developerConfig({ app: app.did, environment: ['test', 'live'] })
    expectError(res, 401, 'Unauthorized')
    await expectLogged(res, { environment: null, appDid: app.did }, { status: 401, errorCode: 'Unauthorized', keyPrefix: null })
  })

  it('app or environment given twice with a key never issued, or another app\'s, is 401 Unauthorized: authentication comes first', async () => {
    const otherKey = await (await stack.newApp()).apiKey('test', ['app.config.read'])
    for (const auth of [bearer(`svc_rk_test_${'A'.repeat(32)}`), bearer(otherKey)]) {
      expectError(await developerConfig({ app: [app.did, app.did], environment: 'test' }, auth), 401, 'Unauthorized')
      expectError(await developerConfig({ app: app.did, environment: ['test', 'test'] }, auth), 401, 'Unauthorized')
    }
  })

  it('environment given twice with a valid key is a 4xx contract error', async () => {
    const res = await developerConfig({ app: app.did, environment: ['test', 'test'] }, bearer(key))
    expectError(res, 400, 'InvalidRequest', /environment/)
  })
})
