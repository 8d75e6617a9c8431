/**
 * Isolation: test and live never see each other's configuration, and one app never reads or changes
 * another's, whether it holds an API key (developer route) or a service-auth JWT (/xrpc).
 */
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, freshConfig, getConfig, GET_CONFIG, httpRequest, updateConfig, UPDATE_CONFIG, xrpcGet, xrpcPost } from './helpers'

let stack: TestStack
let a: TestApp
let b: TestApp

beforeAll(async () => {
  stack = await startStack('isolation')
  a = await stack.newApp({ environments: ['test', 'live'] })
  b = await stack.newApp({ environments: ['test', 'live'] })
  // make every configuration distinguishable: A test has tickets on, A live has a live webhook, B has passes
  expectOk(await updateConfig(stack, a, { environment: 'test', modules: { tickets: true } }))
  expectOk(await updateConfig(stack, a, { environment: 'live', webhookUrl: 'https://93.184.216.34/live-hook' }))
  expectOk(await updateConfig(stack, b, { environment: 'test', ticketing: { qrPasses: true }, ticketFee: { passToBuyer: true } }))
  expectOk(await updateConfig(stack, b, { environment: 'live', ticketing: { walletPasses: true } }))
})
afterAll(async () => {
  await stack.stop()
})

async function developerConfig(app: string, environment: string | null, key: string) {
  const url = new URL('/api/app/developer/config', stack.checkoutUrl)
  url.searchParams.set('app', app)
  if (environment) url.searchParams.set('environment', environment)
  return httpRequest(url.toString(), { headers: bearer(key) })
}

const devView = (appDid: string, environment: string, tickets: boolean, configured: boolean) => ({
  appDid,
  environment,
  status: 'active',
  webhook: { configured, paused: false, disabled: null },
  modules: { payments: true, products: false, tickets },
})

describe('test and live API keys', () => {
  it('a test key reads the test configuration only, never live', async () => {
    const testKey = await a.apiKey('test')
    expect(expectOk(await developerConfig(a.did, 'test', testKey))).toEqual(devView(a.did, 'test', true, false))
    expect(expectOk(await developerConfig(a.did, null, testKey))).toEqual(devView(a.did, 'test', true, false))
    expectError(await developerConfig(a.did, 'live', testKey), 401, 'Unauthorized')
  })

  it('a live key reads the live configuration only, never test', async () => {
    const liveKey = await a.apiKey('live')
    expect(expectOk(await developerConfig(a.did, 'live', liveKey))).toEqual(devView(a.did, 'live', false, true))
    expect(expectOk(await developerConfig(a.did, null, liveKey))).toEqual(devView(a.did, 'live', false, true))
    expectError(await developerConfig(a.did, 'test', liveKey), 401, 'Unauthorized')
  })

  it('a test key does not fall back to live when the test configuration is gone (and the reverse)', async () => {
    const c = await stack.newApp({ environments: ['test', 'live'] })
    const testKey = await c.apiKey('test')
    const liveKey = await c.apiKey('live')
    await stack.models.AppEnvironment.deleteOne({ appDid: c.did, environment: 'test' })
    expectError(await developerConfig(c.did, 'test', testKey), 404, 'AppConfigNotFound')
    expectError(await developerConfig(c.did, null, testKey), 404, 'AppConfigNotFound')
    expect(expectOk(await developerConfig(c.did, null, liveKey))).toEqual(devView(c.did, 'live', false, false))
    await stack.models.AppEnvironment.deleteOne({ appDid: c.did, environment: 'live' })
    expectError(await developerConfig(c.did, 'live', liveKey), 404, 'AppConfigNotFound')
  })
})

describe('one app never reads another app', () => {
  it("a key of app A with app=B is 401 Unauthorized, in both environments, and reveals nothing of B", async () => {
    for (const environment of ['test', 'live'] as const) {
      const keyA = await a.apiKey(environment)
      const res = await developerConfig(b.did, environment, keyA)
      expectError(res, 401, 'Unauthorized')
      expect(res.text).not.toContain('qrPasses')
      expect(res.text).not.toContain('"modules"')
    }
  })

  it('a key of app B reads B, not A', async () => {
    const keyB = await b.apiKey('test')
    expect(expectOk(await developerConfig(b.did, 'test', keyB))).toEqual(devView(b.did, 'test', false, false))
    expectError(await developerConfig(a.did, 'test', keyB), 401, 'Unauthorized')
  })

  it("getConfig always returns the caller's own configuration", async () => {
    for (const [app, environment, expected] of [
      [a, 'test', { ...freshConfig(a.did, 'test'), appConfig: { ...freshConfig(a.did, 'test').appConfig, modules: { tickets: true } } }],
      [
        a,
        'live',
        { ...freshConfig(a.did, 'live'), webhook: { configured: true, url: 'https://93.184.216.34/live-hook', paused: false, channel: 'webhook' } },
      ],
      [
        b,
        'test',
        {
          ...freshConfig(b.did, 'test'),
          appConfig: {
            ...freshConfig(b.did, 'test').appConfig,
            ticketing: { qrPasses: true, walletPasses: false },
            ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: true },
          },
        },
      ],
      [
        b,
        'live',
        { ...freshConfig(b.did, 'live'), appConfig: { ...freshConfig(b.did, 'live').appConfig, ticketing: { qrPasses: false, walletPasses: true } } },
      ],
    ] as const) {
      const res = await getConfig(stack, app, environment)
      expect(expectOk(res)).toEqual(expected)
    }
  })

  it("a JWT of app A naming app B anywhere still reads A's configuration", async () => {
    const res = await xrpcGet(stack, GET_CONFIG, { environment: 'test', app: b.did, appDid: b.did, did: b.did }, bearer(await a.jwt(GET_CONFIG)))
    expect(expectOk(res).appDid).toBe(a.did)
    expect(res.body.appConfig.ticketing).toEqual({ qrPasses: false, walletPasses: false })
  })

  it("a JWT of app A cannot change app B's configuration", async () => {
    const before = expectOk(await getConfig(stack, b, 'test'))
    expectError(
      await xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', appDid: b.did, modules: { tickets: true } }, bearer(await a.jwt(UPDATE_CONFIG))),
      400,
      'InvalidRequest',
    )
    expect(expectOk(await getConfig(stack, b, 'test'))).toEqual(before)
  })

  it('an API key of an app cannot be used on /xrpc to read it', async () => {
    const keyA = await a.apiKey('test')
    expectError(await xrpcGet(stack, GET_CONFIG, { environment: 'test' }, bearer(keyA)), 401, 'ApiKeyNotAccepted')
  })
})

describe('live and test configurations of one app are independent', () => {
  it('updating test leaves live unchanged, and the reverse', async () => {
    const c = await stack.newApp({ environments: ['test', 'live'] })
    const t = expectOk(
      await updateConfig(stack, c, {
        environment: 'test',
        modules: { tickets: true },
        ticketing: { qrPasses: true, walletPasses: true },
        ticketFee: { passToBuyer: true },
        webhookUrl: 'http://93.184.216.34/test-hook',
      }),
    )
    expect(t.environment).toBe('test')
    expect(expectOk(await getConfig(stack, c, 'live'))).toEqual(freshConfig(c.did, 'live'))

    const l = expectOk(await updateConfig(stack, c, { environment: 'live', webhookUrl: 'https://93.184.216.34/live-hook', ticketFee: { passToBuyer: false } }))
    expect(l.environment).toBe('live')
    expect(expectOk(await getConfig(stack, c, 'test'))).toEqual({
      ...freshConfig(c.did, 'test'),
      webhook: { configured: true, url: 'http://93.184.216.34/test-hook', paused: false, channel: 'webhook' },
      appConfig: {
        modules: { tickets: true },
        ticketing: { qrPasses: true, walletPasses: true },
        ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: true },
      },
    })
    expect(expectOk(await getConfig(stack, c, 'live'))).toEqual({
      ...freshConfig(c.did, 'live'),
      webhook: { configured: true, url: 'https://93.184.216.34/live-hook', paused: false, channel: 'webhook' },
    })
  })

  it('the developer route shows each environment its own modules', async () => {
    const c = await stack.newApp({ environments: ['test', 'live'] })
    expectOk(await updateConfig(stack, c, { environment: 'live', modules: { tickets: true } }))
    expect(expectOk(await developerConfig(c.did, 'test', await c.apiKey('test')))).toEqual(devView(c.did, 'test', false, false))
    expect(expectOk(await developerConfig(c.did, 'live', await c.apiKey('live')))).toEqual(devView(c.did, 'live', true, false))
  })

  it('an app registered only in test cannot get a live key nor read live', async () => {
    const c = await stack.newApp({ environments: ['test'] })
    await expect(c.apiKey('live')).rejects.toMatchObject({ code: 'AppEnvironmentNotConfigured' })
    expectError(await getConfig(stack, c, 'live'), 404, 'AppEnvironmentNotConfigured')
  })
})
