/**
 * money.svc.app.getConfig / updateConfig through the whole stack: the contract's fields, app-controlled
 * updates, refused (platform-owned, unknown) fields changing nothing, appUrl, last write wins and
 * concurrent identical updates.
 */
import { startStack, type TestApp, type TestStack } from '../../stack'
import {
  bearer,
  expectError,
  expectOk,
  freshConfig,
  getConfig,
  GET_CONFIG,
  updateConfig,
  UPDATE_CONFIG,
  xrpcGet,
  xrpcPost,
} from './helpers'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('app-config')
})
afterAll(async () => {
  await stack.stop()
})

async function readConfig(app: TestApp, environment: 'test' | 'live' = 'test') {
  return expectOk(await getConfig(stack, app, environment))
}

describe('getConfig', () => {
  it('returns every contract field of a freshly registered app, exactly', async () => {
    const app = await stack.newApp()
    const res = await getConfig(stack, app, 'test')
    expect(expectOk(res)).toEqual({
      appDid: app.did,
      environment: 'test',
      appUrl: 'https://app.example.com',
      feeShareBps: 500,
      webhook: { configured: false, paused: false, channel: 'webhook' },
      appConfig: {
        modules: { tickets: false },
        ticketing: { qrPasses: false, walletPasses: false },
        ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: false },
      },
    })
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
  })

  it('returns the live configuration of an app registered in both environments', async () => {
    const app = await stack.newApp({ environments: ['test', 'live'] })
    expect(await readConfig(app, 'live')).toEqual(freshConfig(app.did, 'live'))
    expect(await readConfig(app, 'test')).toEqual(freshConfig(app.did, 'test'))
  })

  it('an app registered only in test asking for live is 404 AppEnvironmentNotConfigured', async () => {
    const app = await stack.newApp({ environments: ['test'] })
    expectError(await getConfig(stack, app, 'live'), 404, 'AppEnvironmentNotConfigured')
  })

  it('an app registered only in live asking for test is 404 AppEnvironmentNotConfigured', async () => {
    const app = await stack.newApp({ environments: ['live'] })
    expectError(await getConfig(stack, app, 'test'), 404, 'AppEnvironmentNotConfigured')
    expect(await readConfig(app, 'live')).toEqual(freshConfig(app.did, 'live'))
  })

  it('updateConfig for an environment that is not configured is 404 AppEnvironmentNotConfigured and creates nothing', async () => {
    const app = await stack.newApp({ environments: ['test'] })
    expectError(await updateConfig(stack, app, { environment: 'live', modules: { tickets: true } }), 404, 'AppEnvironmentNotConfigured')
    expect(await stack.models.AppEnvironment.countDocuments({ appDid: app.did, environment: 'live' })).toBe(0)
    expectError(await getConfig(stack, app, 'live'), 404, 'AppEnvironmentNotConfigured')
  })

  it('updateConfig with an environment that is neither test nor live is 400 InvalidRequest', async () => {
    const app = await stack.newApp()
    expectError(await updateConfig(stack, app, { environment: 'prod', modules: { tickets: true } }), 400, 'InvalidRequest', /environment/)
    expect(await readConfig(app)).toEqual(freshConfig(app.did, 'test'))
  })
})

describe('updateConfig: app-controlled fields', () => {
  it('sets modules.tickets, ticketing.qrPasses / walletPasses and ticketFee.passToBuyer; the response and getConfig reflect them', async () => {
    const app = await stack.newApp()
    const res = await updateConfig(stack, app, {
      environment: 'test',
      modules: { tickets: true },
      ticketing: { qrPasses: true, walletPasses: true },
      ticketFee: { passToBuyer: true },
    })
    const expectedAppConfig = {
      modules: { tickets: true },
      ticketing: { qrPasses: true, walletPasses: true },
      ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: true },
    }
    expect(expectOk(res)).toEqual({
      environment: 'test',
      webhook: { configured: false, paused: false, channel: 'webhook' },
      appConfig: expectedAppConfig,
    })
    expect(await readConfig(app)).toEqual({ ...freshConfig(app.did, 'test'), appConfig: expectedAppConfig })
  })

  it('omitted fields keep their values', async () => {
    const app = await stack.newApp()
    expectOk(
      await updateConfig(stack, app, {
        environment: 'test',
        modules: { tickets: true },
        ticketing: { qrPasses: true, walletPasses: false },
        ticketFee: { passToBuyer: true },
      }),
    )
    // only walletPasses: everything else stays
    const res = expectOk(await updateConfig(stack, app, { environment: 'test', ticketing: { walletPasses: true } }))
    const expected = {
      modules: { tickets: true },
      ticketing: { qrPasses: true, walletPasses: true },
      ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: true },
    }
    expect(res.appConfig).toEqual(expected)
    expect(await readConfig(app)).toEqual({ ...freshConfig(app.did, 'test'), appConfig: expected })
    // empty objects and an environment-only body change nothing
    expect(expectOk(await updateConfig(stack, app, { environment: 'test', modules: {}, ticketing: {}, ticketFee: {} })).appConfig).toEqual(expected)
    expect(expectOk(await updateConfig(stack, app, { environment: 'test' })).appConfig).toEqual(expected)
    expect(await readConfig(app)).toEqual({ ...freshConfig(app.did, 'test'), appConfig: expected })
  })

  it('switches can be turned off again', async () => {
    const app = await stack.newApp()
    expectOk(await updateConfig(stack, app, { environment: 'test', modules: { tickets: true }, ticketFee: { passToBuyer: true } }))
    const res = expectOk(await updateConfig(stack, app, { environment: 'test', modules: { tickets: false }, ticketFee: { passToBuyer: false } }))
    expect(res.appConfig.modules).toEqual({ tickets: false })
    expect(res.appConfig.ticketFee.passToBuyer).toBe(false)
    expect(await readConfig(app)).toEqual(freshConfig(app.did, 'test'))
  })

  it('last write wins (two sequential updates of the same field)', async () => {
    const app = await stack.newApp()
    expect(expectOk(await updateConfig(stack, app, { environment: 'test', modules: { tickets: true }, ticketing: { qrPasses: true } })).appConfig.modules).toEqual({
      tickets: true,
    })
    const second = expectOk(await updateConfig(stack, app, { environment: 'test', modules: { tickets: false }, ticketing: { qrPasses: false } }))
    expect(second.appConfig.modules).toEqual({ tickets: false })
    expect(second.appConfig.ticketing).toEqual({ qrPasses: false, walletPasses: false })
    const read = await readConfig(app)
    expect(read.appConfig.modules).toEqual({ tickets: false })
    expect(read.appConfig.ticketing).toEqual({ qrPasses: false, walletPasses: false })
  })

  it('last write wins under concurrency: 10 parallel updates of two whole settings end as one of them, never a mix', async () => {
    const app = await stack.newApp()
    const a = { environment: 'test', modules: { tickets: true }, ticketing: { qrPasses: true, walletPasses: true }, ticketFee: { passToBuyer: true }, webhookUrl: 'https://93.184.216.34/hooks/a' }
    const b = { environment: 'test', modules: { tickets: false }, ticketing: { qrPasses: false, walletPasses: false }, ticketFee: { passToBuyer: false }, webhookUrl: 'https://93.184.216.34/hooks/b' }
    const tokens = await Promise.all(Array.from({ length: 10 }, () => app.jwt(UPDATE_CONFIG)))
    const results = await Promise.all(tokens.map((t, i) => xrpcPost(stack, UPDATE_CONFIG, i % 2 === 0 ? a : b, bearer(t))))
    for (const r of results) expectOk(r)
    const read = await readConfig(app)
    const settled = { modules: read.appConfig.modules, ticketing: read.appConfig.ticketing, passToBuyer: read.appConfig.ticketFee.passToBuyer, url: read.webhook.url }
    const as = (x: typeof a) => ({ modules: x.modules, ticketing: x.ticketing, passToBuyer: x.ticketFee.passToBuyer, url: x.webhookUrl })
    expect([as(a), as(b)]).toContainEqual(settled)
    expect(await stack.models.AppEnvironment.countDocuments({ appDid: app.did })).toBe(1)
  })

  it('parallel updates of different fields both stay (each changes only what it names)', async () => {
    const app = await stack.newApp()
    const [one, two] = await Promise.all([app.jwt(UPDATE_CONFIG), app.jwt(UPDATE_CONFIG)])
    const results = await Promise.all([
      xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', modules: { tickets: true } }, bearer(one)),
      xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', ticketing: { qrPasses: true } }, bearer(two)),
    ])
    for (const r of results) expectOk(r)
    const read = await readConfig(app)
    expect([read.appConfig.modules, read.appConfig.ticketing]).toEqual([{ tickets: true }, { qrPasses: true, walletPasses: false }])
  })

  it('10 concurrent identical updates (each with its own JWT) all succeed with the same final state', async () => {
    const app = await stack.newApp()
    const body = {
      environment: 'test',
      modules: { tickets: true },
      ticketing: { qrPasses: true, walletPasses: false },
      ticketFee: { passToBuyer: true },
      webhookUrl: 'https://93.184.216.34/hooks/svc',
    }
    const tokens = await Promise.all(Array.from({ length: 10 }, () => app.jwt(UPDATE_CONFIG)))
    expect(new Set(tokens).size).toBe(10)
    const results = await Promise.all(tokens.map((t) => xrpcPost(stack, UPDATE_CONFIG, body, bearer(t))))
    const expected = {
      environment: 'test',
      webhook: { configured: true, url: 'https://93.184.216.34/hooks/svc', paused: false, channel: 'webhook' },
      appConfig: {
        modules: { tickets: true },
        ticketing: { qrPasses: true, walletPasses: false },
        ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: true },
      },
    }
    // the first configuration of a channel creates the signing secret, and every call naming the URL returns it
    // (docs/events.md): all ten carry the one secret
    const bodies = results.map((r) => expectOk(r))
    const withSecret = bodies.filter((b) => b.webhook.signingSecret !== undefined)
    expect(withSecret).toHaveLength(10)
    expect(new Set(withSecret.map((b) => b.webhook.signingSecret)).size).toBe(1)
    expect(withSecret[0].webhook.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    for (const b of bodies) {
      const { signingSecret: _secret, ...webhook } = b.webhook
      expect({ ...b, webhook }).toEqual(expected)
    }
    expect(await readConfig(app)).toEqual({ ...freshConfig(app.did, 'test'), webhook: expected.webhook, appConfig: expected.appConfig })
    expect(await stack.models.AppEnvironment.countDocuments({ appDid: app.did })).toBe(1)
  })
})

describe('updateConfig: refused fields change nothing', () => {
  const refused: [string, Record<string, unknown>, RegExp][] = [
    ['ticketFee.bps', { ticketFee: { bps: 0 } }, /ticketFee\.bps/],
    ['ticketFee.flatAmount', { ticketFee: { flatAmount: 0 } }, /ticketFee\.flatAmount/],
    ['ticketFee.flatCurrency', { ticketFee: { flatCurrency: 'eur' } }, /ticketFee\.flatCurrency/],
    ['feeShareBps', { feeShareBps: 10000 }, /feeShareBps/],
    ['an unknown top-level field', { theme: 'dark' }, /theme/],
    ['an unknown modules field', { modules: { payments: false } }, /modules\.payments/],
    ['an unknown ticketing field', { ticketing: { nfcPasses: true } }, /ticketing\.nfcPasses/],
    ['status', { status: 'suspended' }, /status/],
    ['webhook.paused', { webhook: { paused: true } }, /webhook/],
    ['appDid', { appDid: 'did:key:zSomeoneElse' }, /appDid/],
  ]

  it.each(refused)('%s is 400 InvalidRequest, even beside allowed fields, and nothing changes', async (_label, extra, field) => {
    const app = await stack.newApp()
    const res = await updateConfig(stack, app, {
      environment: 'test',
      modules: { tickets: true },
      ticketing: { qrPasses: true },
      ticketFee: { passToBuyer: true },
      webhookUrl: 'https://93.184.216.34/hook',
      ...extra,
      ...(extra.ticketFee ? { ticketFee: { passToBuyer: true, ...(extra.ticketFee as object) } } : {}),
      ...(extra.modules ? { modules: { tickets: true, ...(extra.modules as object) } } : {}),
      ...(extra.ticketing ? { ticketing: { qrPasses: true, ...(extra.ticketing as object) } } : {}),
    })
    expectError(res, 400, 'InvalidRequest', field)
    expect(await readConfig(app)).toEqual(freshConfig(app.did, 'test'))
  })

  it('platform-owned fields are refused even with their current values', async () => {
    const app = await stack.newApp()
    const res = await updateConfig(stack, app, { environment: 'test', ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: true } })
    expectError(res, 400, 'InvalidRequest', /platform-owned/)
    expect(await readConfig(app)).toEqual(freshConfig(app.did, 'test'))
  })

  it('a refused update does not change an earlier configuration', async () => {
    const app = await stack.newApp()
    const configured = expectOk(await updateConfig(stack, app, { environment: 'test', modules: { tickets: true }, ticketFee: { passToBuyer: true } }))
    expectError(await updateConfig(stack, app, { environment: 'test', modules: { tickets: false }, feeShareBps: 0 }), 400, 'InvalidRequest', /feeShareBps/)
    expectError(await updateConfig(stack, app, { environment: 'test', ticketFee: { passToBuyer: false, bps: 1 } }), 400, 'InvalidRequest', /bps/)
    const read = await readConfig(app)
    expect(read.appConfig).toEqual(configured.appConfig)
    expect(read.feeShareBps).toBe(500)
  })
})

describe('updateConfig: appUrl', () => {
  it('the registered value is accepted (with or without the trailing slash) and changes nothing else', async () => {
    const app = await stack.newApp()
    const same = expectOk(await updateConfig(stack, app, { environment: 'test', appUrl: 'https://app.example.com' }))
    expect(same).toEqual({ environment: 'test', webhook: { configured: false, paused: false, channel: 'webhook' }, appConfig: freshConfig(app.did, 'test').appConfig })
    expectOk(await updateConfig(stack, app, { environment: 'test', appUrl: 'https://app.example.com/', modules: { tickets: true } }))
    const read = await readConfig(app)
    expect(read.appUrl).toBe('https://app.example.com')
    expect(read.appConfig.modules).toEqual({ tickets: true })
  })

  it.each([
    'https://evil.example.com',
    'http://app.example.com',
    'https://app.example.com:8443',
    'https://app.example.com.evil.test',
  ])('a different value (%s) is 400 AppUrlNotAllowed and nothing changes', async (appUrl) => {
    const app = await stack.newApp()
    const res = await updateConfig(stack, app, { environment: 'test', appUrl, modules: { tickets: true }, webhookUrl: 'https://93.184.216.34/hook' })
    expectError(res, 400, 'AppUrlNotAllowed')
    expect(await readConfig(app)).toEqual(freshConfig(app.did, 'test'))
  })

  it('a malformed appUrl is 400 InvalidRequest naming appUrl', async () => {
    const app = await stack.newApp()
    expectError(await updateConfig(stack, app, { environment: 'test', appUrl: 'app.example.com' }), 400, 'InvalidRequest', /appUrl/)
    expect(await readConfig(app)).toEqual(freshConfig(app.did, 'test'))
  })
})

describe('webhookUrl in the responses', () => {
  it('a configured webhook shows configured: true and the URL in getConfig', async () => {
    const app = await stack.newApp()
    const res = expectOk(await updateConfig(stack, app, { environment: 'test', webhookUrl: 'https://93.184.216.34/hooks/svc' }))
    expect(res.webhook).toMatchObject({ configured: true, paused: false })
    expect(await readConfig(app)).toEqual({
      ...freshConfig(app.did, 'test'),
      webhook: { configured: true, url: 'https://93.184.216.34/hooks/svc', paused: false, channel: 'webhook' },
    })
  })
})

it('getConfig ignores extra query parameters that try to select another app', async () => {
  const a = await stack.newApp()
  const b = await stack.newApp()
  expectOk(await updateConfig(stack, b, { environment: 'test', modules: { tickets: true } }))
  const res = await xrpcGet(stack, GET_CONFIG, { environment: 'test', app: b.did, appDid: b.did, iss: b.did }, bearer(await a.jwt(GET_CONFIG)))
  expect(expectOk(res)).toEqual(freshConfig(a.did, 'test'))
})

it('updateConfig with an appDid-like extra field is refused and never touches the other app', async () => {
  const a = await stack.newApp()
  const b = await stack.newApp()
  expectError(await xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', app: b.did, modules: { tickets: true } }, bearer(await a.jwt(UPDATE_CONFIG))), 400, 'InvalidRequest')
  expect(await readConfig(a)).toEqual(freshConfig(a.did, 'test'))
  expect(await readConfig(b)).toEqual(freshConfig(b.did, 'test'))
})
