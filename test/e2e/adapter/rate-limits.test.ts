/**
 * Rate limits through the real adapter with Redis: per app and environment on /xrpc (checked after service-auth),
 * per API key on the utility routes; 429 RateLimitExceeded with Retry-After and the RateLimit headers; concurrent
 * requests counted exactly; one app's, one environment's and one key's count never spend another's; a refused
 * updateConfig changes nothing; the window's end lets requests through again.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { randomBytes } from 'node:crypto'
import { UTILITY_KEYS_PER_ADDRESS } from '@svc/xrpc-adapter'
import { bearer, expectError, expectOk, getConfig, GET_CONFIG, httpRequest, readRequestLog, updateConfig, xrpcGet, type HttpResult } from './helpers'
import { initiate, product } from './payment-helpers'

const XRPC_MAX = 5
const UTILITY_MAX = 3
/** long enough for a test's sequential calls to fit in one window on a loaded machine */
const WINDOW_MS = 6000

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('rate-limits', {
    limits: { xrpc: { max: XRPC_MAX, windowMs: WINDOW_MS }, utility: { max: UTILITY_MAX, windowMs: WINDOW_MS } },
  })
})
afterAll(async () => {
  await stack.stop()
})

const statuses = (results: HttpResult[]) => results.map((r) => r.status).sort()

function expectLimited(res: HttpResult, max: number) {
  expectError(res, 429, 'RateLimitExceeded', new RegExp(`at most ${max} requests per ${WINDOW_MS / 1000} s`))
  const retryAfter = Number(res.headers.get('retry-after'))
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(retryAfter).toBeLessThanOrEqual(WINDOW_MS / 1000)
  expect(res.headers.get('ratelimit-limit')).toBe(String(max))
  expect(res.headers.get('ratelimit-remaining')).toBe('0')
}

describe('/xrpc: per app and environment', () => {
  let app: TestApp
  let other: TestApp

  beforeAll(async () => {
    app = await stack.newApp({ environments: ['test', 'live'] })
    other = await stack.newApp()
  })

  it('counts concurrent calls exactly, refuses the rest with 429, and lets calls through again after the window', async () => {
    const results = await Promise.all(Array.from({ length: XRPC_MAX + 7 }, () => getConfig(stack, app, 'test')))
    expect(statuses(results)).toEqual([...Array(XRPC_MAX).fill(200), ...Array(7).fill(429)])
    const ok = results.filter((r) => r.status === 200)
    expect(ok.map((r) => r.headers.get('ratelimit-limit'))).toEqual(Array(XRPC_MAX).fill(String(XRPC_MAX)))
    expect(ok.map((r) => Number(r.headers.get('ratelimit-remaining'))).sort()).toEqual([0, 1, 2, 3, 4])
    for (const refused of results.filter((r) => r.status === 429)) expectLimited(refused, XRPC_MAX)

    // the other environment of the same app and another app have counts of their own
    expectOk(await getConfig(stack, app, 'live'))
    expectOk(await getConfig(stack, other, 'test'))

    const retryAfter = Number(results.find((r) => r.status === 429)!.headers.get('retry-after'))
    await sleep(retryAfter * 1000 + 100)
    expectOk(await getConfig(stack, app, 'test'))
  })

  it('counts every made-up environment under one count, so new values do not get fresh ones', async () => {
    const fresh = await stack.newApp()
    const results: HttpResult[] = []
    for (let i = 0; i < XRPC_MAX + 2; i++) results.push(await xrpcGet(stack, GET_CONFIG, { environment: `made-up-${i}` }, bearer(await fresh.jwt(GET_CONFIG))))
    expect(results.map((r) => r.status)).toEqual([...Array(XRPC_MAX).fill(400), 429, 429])
    // the real environments keep their own counts
    expectOk(await getConfig(stack, fresh, 'test'))
  })

  it('refuses an updateConfig past the limit without changing anything', async () => {
    const fresh = await stack.newApp()
    for (let i = 0; i < XRPC_MAX; i++) expectOk(await getConfig(stack, fresh, 'test'))
    const before = await stack.models.AppEnvironment.findOne({ appDid: fresh.did, environment: 'test' }).lean()
    const refused = await updateConfig(stack, fresh, { environment: 'test', webhookUrl: 'https://hooks.example.com/limited' })
    expectLimited(refused, XRPC_MAX)
    const after = await stack.models.AppEnvironment.findOne({ appDid: fresh.did, environment: 'test' }).lean()
    expect(after).toEqual(before)
  })

  it('counts an initiate under the environment its product names: test checkouts never spend live ones', async () => {
    const fresh = await stack.newApp({ environments: ['test', 'live'] })
    // an app selling for itself needs no approval
    for (let i = 0; i < XRPC_MAX; i++) expectOk(await initiate(stack, fresh, product(fresh.did, { environment: 'test' })))
    expectLimited(await initiate(stack, fresh, product(fresh.did, { environment: 'test' })), XRPC_MAX)
    const live = await initiate(stack, fresh, product(fresh.did, { environment: 'live' }))
    expect(live.status).not.toBe(429)
    expect(live.headers.get('ratelimit-remaining')).toBe(String(XRPC_MAX - 1))
  })

  it('does not count a call whose service-auth is refused', async () => {
    const fresh = await stack.newApp()
    for (let i = 0; i < XRPC_MAX + 2; i++) {
      const res = await xrpcGet(stack, GET_CONFIG, { environment: 'test' }, bearer(await fresh.jwt('money.svc.app.updateConfig')))
      expectError(res, 401, 'BadJwtLexiconMethod')
    }
    expectOk(await getConfig(stack, fresh, 'test'))
  })
})

describe('utility routes: per API key', () => {
  it('counts each key on its own and refuses past the limit with 429', async () => {
    const app = await stack.newApp()
    const [key, otherKey] = [await app.apiKey('test'), await app.apiKey('test')]
    const url = `${stack.checkoutUrl}/api/app/developer/config?app=${encodeURIComponent(app.did)}&environment=test`
    const results = await Promise.all(Array.from({ length: UTILITY_MAX + 4 }, () => httpRequest(url, { headers: bearer(key) })))
    expect(statuses(results)).toEqual([...Array(UTILITY_MAX).fill(200), ...Array(4).fill(429)])
    for (const refused of results.filter((r) => r.status === 429)) expectLimited(refused, UTILITY_MAX)
    expect((await httpRequest(url, { headers: bearer(otherKey) })).status).toBe(200)
  })

  it('per client address too, at ten keys\' worth: calls without a key or with made-up keys stop there', async () => {
    const app = await stack.newApp()
    // a window of its own (the other tests of this file called from this address too)
    await new Promise((r) => setTimeout(r, WINDOW_MS))
    const url = `${stack.checkoutUrl}/api/app/developer/config?app=${encodeURIComponent(app.did)}&environment=test`
    const madeUp = () => bearer(`svc_rk_test_${randomBytes(24).toString('base64url')}`)
    const results = await Promise.all(Array.from({ length: UTILITY_MAX * UTILITY_KEYS_PER_ADDRESS + 2 }, (_, i) => httpRequest(url, i % 2 ? { headers: madeUp() } : {})))
    expect(statuses(results)).toEqual([...Array(UTILITY_MAX * UTILITY_KEYS_PER_ADDRESS).fill(401), 429, 429])
    for (const refused of results.filter((r) => r.status === 429)) expectLimited(refused, UTILITY_MAX * UTILITY_KEYS_PER_ADDRESS)
    // the refused calls are answered but not written to the request log: only the 401s are there
    const logged = new Set((await readRequestLog(stack, { appDid: app.did })).map((e) => e.requestId))
    expect(results.filter((r) => logged.has(r.requestId!)).map((r) => r.status)).toEqual(Array(UTILITY_MAX * UTILITY_KEYS_PER_ADDRESS).fill(401))
    await new Promise((r) => setTimeout(r, WINDOW_MS))
  })

  it('counts a route spelled percent-encoded (/%61pi/…) as the route it is', async () => {
    const app = await stack.newApp()
    const key = await app.apiKey('test')
    const query = `?app=${encodeURIComponent(app.did)}&environment=test`
    const encoded = await Promise.all(Array.from({ length: UTILITY_MAX }, () => httpRequest(`${stack.checkoutUrl}/%61pi/app/developer/config${query}`, { headers: bearer(key) })))
    expect(statuses(encoded)).toEqual(Array(UTILITY_MAX).fill(200))
    expectLimited(await httpRequest(`${stack.checkoutUrl}/api/app/developer/config${query}`, { headers: bearer(key) }), UTILITY_MAX)
    expectLimited(await httpRequest(`${stack.checkoutUrl}/%61pi/app/developer/config${query}`, { headers: bearer(key) }), UTILITY_MAX)
  })
})
