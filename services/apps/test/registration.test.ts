/** Operator-side registration and restricted API keys, on the test FerretDB. */
import { createHash } from 'node:crypto'
import type mongoose from 'mongoose'
import { contractError, isolate } from '@svc/testing'
import { connectApps, type AppsModels } from '../src'
import { registerApp, type RegisterAppInput } from '../src/domain/registration'
import { updateAppConfig } from '../src/domain/update-app-config'
import { getAppConfig } from '../src/domain/get-app-config'
import { API_KEY_PATTERN, hashApiKey } from '@svc/api-keys'
import { findActiveKey, issueApiKey, revokeApiKey } from '../src/domain/api-keys'
import { authorizeApiKey } from '../src/domain/developer-access'
import type { SigningSecrets } from '../src/domain/signing-secrets'

/** The events domain's answer in these domain tests: the environment's signing secret exists already. */
const secretsMade: SigningSecrets = { ensure: async () => ({ secret: null }) }

let conn: mongoose.Connection
let models: AppsModels
let seq = 0
const newDid = () => `did:web:app${++seq}-${Date.now().toString(36)}.example.com`
const policy = { allowLoopbackWebhooksInTest: false, resolve: async () => ['93.184.216.34'] }

function base(did: string, over: Partial<RegisterAppInput> = {}): RegisterAppInput {
  return { did, environment: 'test', appUrl: 'https://app.example.com', feeShareBps: 500, ...over }
}


beforeAll(async () => {
  ;({ conn, models } = await connectApps(isolate('apps_registration').mongoUrl))
})

afterAll(async () => {
  await conn?.dropDatabase().catch(() => undefined)
  await conn?.close()
})

describe('registerApp validation → InvalidRequest, nothing written', () => {
  const did = 'did:web:invalid.example.com'
  test.each<[string, Partial<RegisterAppInput>]>([
    ['not a DID', { did: 'app.example.com' }],
    ['an empty method-specific id', { did: 'did:web:' }],
    ['an uppercase method', { did: 'DID:web:x.example.com' }],
    ['a DID with a space', { did: 'did:web:x y' }],
    ['an empty DID', { did: '' }],
    ['an unknown environment', { environment: 'prod' }],
    ['feeShareBps below 0', { feeShareBps: -1 }],
    ['feeShareBps above 10000', { feeShareBps: 10001 }],
    ['a fractional feeShareBps', { feeShareBps: 12.5 }],
    ['a NaN feeShareBps', { feeShareBps: Number.NaN }],
    ['ticketFee.bps above 10000', { ticketFee: { bps: 10001 } }],
    ['a negative ticketFee.bps', { ticketFee: { bps: -5 } }],
    ['a negative ticketFee.flatAmount', { ticketFee: { flatAmount: -1 } }],
    ['a fractional ticketFee.flatAmount', { ticketFee: { flatAmount: 0.5 } }],
    ['an uppercase currency', { ticketFee: { flatAmount: 30, flatCurrency: 'USD' } }],
    ['a two-letter currency', { ticketFee: { flatAmount: 30, flatCurrency: 'us' } }],
    ['a currency with a digit', { ticketFee: { flatAmount: 30, flatCurrency: 'us1' } }],
    // the amount is in the currency's minor units: a currency alone would keep the amount and change its worth
    ['a flat fee currency without its amount', { ticketFee: { flatCurrency: 'jpy' } }],
    ['an appUrl that is not a URL', { appUrl: 'not a url' }],
    ['an appUrl that is not http(s)', { appUrl: 'ftp://app.example.com' }],
  ])('%s', async (_label, over) => {
    const err = await contractError(registerApp({ models }, base(did, over)))
    expect(err.code).toBe('InvalidRequest')
    expect(err.status).toBe(400)
    expect(await models.App.countDocuments({})).toBe(0)
    expect(await models.AppEnvironment.countDocuments({})).toBe(0)
  })

  test('the bounds themselves are accepted', async () => {
    const did = newDid()
    const view = await registerApp({ models }, base(did, { feeShareBps: 10000, ticketFee: { bps: 0, flatAmount: 0, flatCurrency: 'eur' } }))
    expect(view).toMatchObject({ appDid: did, feeShareBps: 10000, ticketFee: { bps: 0, flatAmount: 0, flatCurrency: 'eur', passToBuyer: false } })
  })
})

describe('registration', () => {
  test('a first registration: defaults, app origin normalized', async () => {
    const did = newDid()
    const view = await registerApp({ models }, base(did, { appUrl: 'https://App.Example.com/some/path?x=1', name: 'First', ticketFee: { bps: 250, flatAmount: 30 } }))
    expect(view).toEqual({
      appDid: did,
      environment: 'test',
      status: 'active',
      appUrl: 'https://app.example.com',
      feeShareBps: 500,
      webhook: { configured: false, url: null, paused: false, channel: 'webhook', receiverUrl: null },
      modules: { payments: true, products: false, tickets: false },
      ticketing: { qrPasses: false, walletPasses: false },
      ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: false },
      updatedAt: expect.any(String),
    })
    const app = await models.App.findOne({ did }).lean()
    expect(app).toMatchObject({ did, name: 'First' })
  })

  test('re-registration changes the operator fields and keeps what the app configured', async () => {
    const did = newDid()
    await registerApp({ models }, base(did, { name: 'Keeper', ticketFee: { bps: 100, flatAmount: 10, flatCurrency: 'usd' } }))
    const createdAt = (await models.App.findOne({ did }).lean())?.createdAt
    await updateAppConfig({ models, policy, signingSecrets: secretsMade }, did, {
      environment: 'test',
      webhookUrl: 'https://hooks.example.com/svc',
      modules: { tickets: true },
      ticketing: { qrPasses: true, walletPasses: true },
      ticketFee: { passToBuyer: true },
    })

    const view = await registerApp({ models }, base(did, { appUrl: 'https://new.example.com', feeShareBps: 750, ticketFee: { bps: 300, flatAmount: 45, flatCurrency: 'eur' } }))
    expect(view).toMatchObject({
      appDid: did,
      status: 'active',
      appUrl: 'https://new.example.com',
      feeShareBps: 750,
      ticketFee: { bps: 300, flatAmount: 45, flatCurrency: 'eur', passToBuyer: true },
      webhook: { configured: true, url: 'https://hooks.example.com/svc', paused: false },
      modules: { payments: true, products: false, tickets: true },
      ticketing: { qrPasses: true, walletPasses: true },
    })
    // what the app reads afterwards is the same
    expect(await getAppConfig({ models }, did, 'test')).toEqual({ ...view, updatedAt: expect.any(String) })
    expect(await models.AppEnvironment.countDocuments({ appDid: did })).toBe(1)
    const app = await models.App.findOne({ did }).lean()
    expect(app?.name).toBe('Keeper')
    expect(app?.createdAt).toEqual(createdAt)
  })

  test('re-registration with a name renames the app; without one keeps it', async () => {
    const did = newDid()
    await registerApp({ models }, base(did, { name: 'Old name' }))
    await registerApp({ models }, base(did, { name: 'New name' }))
    expect((await models.App.findOne({ did }).lean())?.name).toBe('New name')
    await registerApp({ models }, base(did))
    expect((await models.App.findOne({ did }).lean())?.name).toBe('New name')
  })

  test("the app's name, shown to creators as who asks, is trimmed and held to a display name's rules: refused, nothing stored", async () => {
    const did = newDid()
    await registerApp({ models }, base(did, { name: '  Shop  ' }))
    expect((await models.App.findOne({ did }).lean())?.name).toBe('Shop')
    for (const [name, why] of [['Pay \u202eevil', /control characters/], ['a\nb', /control characters/], ['n'.repeat(65), /at most 64/]] as const) {
      await expect(registerApp({ models }, base(did, { name }))).rejects.toMatchObject({ code: 'InvalidRequest', message: expect.stringMatching(why) })
    }
    expect((await models.App.findOne({ did }).lean())?.name).toBe('Shop')
    // an empty name is none (the dashboard then names the app by its DID), not an empty heading
    await registerApp({ models }, base(did, { name: '   ' }))
    expect((await models.App.findOne({ did }).lean())?.name).toBeNull()
  })

  test('registering another environment leaves the first untouched', async () => {
    const did = newDid()
    await registerApp({ models }, base(did, { feeShareBps: 100 }))
    await updateAppConfig({ models, policy, signingSecrets: secretsMade }, did, { environment: 'test', modules: { tickets: true } })
    const live = await registerApp({ models }, base(did, { environment: 'live', feeShareBps: 200 }))
    expect(live).toMatchObject({ environment: 'live', feeShareBps: 200, modules: { tickets: false } })
    expect(await getAppConfig({ models }, did, 'test')).toMatchObject({ environment: 'test', feeShareBps: 100, modules: { tickets: true } })
    expect(await models.App.countDocuments({ did })).toBe(1)
    expect(await models.AppEnvironment.countDocuments({ appDid: did })).toBe(2)
  })

  test('8 concurrent registrations of the same DID and environment leave one App and one AppEnvironment', async () => {
    const did = newDid()
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => registerApp({ models }, base(did, { feeShareBps: 100 + i }))),
    )
    expect(results.map((r) => r.status)).toEqual(Array(8).fill('fulfilled'))
    expect(await models.App.countDocuments({ did })).toBe(1)
    expect(await models.AppEnvironment.countDocuments({ appDid: did })).toBe(1)
    expect(await models.AppEnvironment.countDocuments({ appDid: did, environment: 'test' })).toBe(1)
    const doc = await models.AppEnvironment.findOne({ appDid: did }).lean()
    expect(doc?.feeShareBps).toBeGreaterThanOrEqual(100)
    expect(doc?.feeShareBps).toBeLessThanOrEqual(107)
  })

  test('concurrent registrations of both environments of one new DID leave one App and two environments', async () => {
    const did = newDid()
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => registerApp({ models }, base(did, { environment: i % 2 ? 'live' : 'test' }))),
    )
    expect(results.map((r) => r.status)).toEqual(Array(8).fill('fulfilled'))
    expect(await models.App.countDocuments({ did })).toBe(1)
    expect((await models.AppEnvironment.find({ appDid: did }).lean()).map((d) => d.environment).sort()).toEqual(['live', 'test'])
  })
})

describe('API keys', () => {
  let did: string
  beforeAll(async () => {
    did = newDid()
    await registerApp({ models }, base(did))
  })

  test('issueApiKey returns the key once and stores only its SHA-256 hash', async () => {
    const issued = await issueApiKey({ models }, { appDid: did, environment: 'test', permissions: ['app.config.read', 'webhook.test.write', 'app.config.read'] })
    expect(issued.key).toMatch(API_KEY_PATTERN)
    expect(issued.key.startsWith('svc_rk_test_')).toBe(true)
    expect(issued.permissions).toEqual(['app.config.read', 'webhook.test.write'])
    expect(issued.key.startsWith(issued.keyPrefix)).toBe(true)
    expect(issued.keyPrefix.length).toBeLessThan(issued.key.length - 24)

    const raw = await models.ApiKey.collection.findOne({ keyId: issued.keyId })
    expect(raw).not.toBeNull()
    const stored = JSON.stringify(raw)
    expect(stored).not.toContain(issued.key)
    expect(stored).not.toContain(issued.key.slice('svc_rk_test_'.length))
    expect(raw?.keyHash).toBe(createHash('sha256').update(issued.key).digest('hex'))
    expect(raw?.keyHash).toBe(hashApiKey(issued.key))
    expect(raw).toMatchObject({ appDid: did, environment: 'test', keyPrefix: issued.keyPrefix, permissions: ['app.config.read', 'webhook.test.write'], revokedAt: null })
  })

  test('two keys are different', async () => {
    const a = await issueApiKey({ models }, { appDid: did, environment: 'test', permissions: ['app.config.read'] })
    const b = await issueApiKey({ models }, { appDid: did, environment: 'test', permissions: ['app.config.read'] })
    expect(a.key).not.toBe(b.key)
    expect(a.keyId).not.toBe(b.keyId)
  })

  test.each<[string, string[]]>([
    ['an unknown permission', ['app.config.read', 'admin']],
    ['only unknown permissions', ['app.config.write']],
    ['no permissions', []],
  ])('%s → InvalidRequest, nothing stored', async (_label, permissions) => {
    const before = await models.ApiKey.countDocuments({})
    const err = await contractError(issueApiKey({ models }, { appDid: did, environment: 'test', permissions }))
    expect(err.code).toBe('InvalidRequest')
    expect(await models.ApiKey.countDocuments({})).toBe(before)
  })

  test('an environment the app has no configuration for → AppEnvironmentNotConfigured', async () => {
    const err = await contractError(issueApiKey({ models }, { appDid: did, environment: 'live', permissions: ['app.config.read'] }))
    expect(err.code).toBe('AppEnvironmentNotConfigured')
    const unknown = await contractError(issueApiKey({ models }, { appDid: 'did:web:nobody.example.com', environment: 'test', permissions: ['app.config.read'] }))
    expect(unknown.code).toBe('AppEnvironmentNotConfigured')
  })

  test('revokeApiKey: the key stops working; revoking twice or an unknown id reports false', async () => {
    const issued = await issueApiKey({ models }, { appDid: did, environment: 'test', permissions: ['app.config.read'] })
    const hash = hashApiKey(issued.key)
    await expect(authorizeApiKey({ models }, hash, 'app.config.read', did, 'test')).resolves.toEqual({ appDid: did, environment: 'test', keyPrefix: issued.keyPrefix })
    expect(await findActiveKey({ models }, hash)).not.toBeNull()

    await expect(revokeApiKey({ models }, issued.keyId)).resolves.toBe(true)
    const doc = await models.ApiKey.findOne({ keyId: issued.keyId }).lean()
    expect(doc?.revokedAt).toBeInstanceOf(Date)
    expect(await findActiveKey({ models }, hash)).toBeNull()
    const err = await contractError(authorizeApiKey({ models }, hash, 'app.config.read', did, 'test'))
    expect(err.code).toBe('Unauthorized')

    await expect(revokeApiKey({ models }, issued.keyId)).resolves.toBe(false)
    await expect(revokeApiKey({ models }, 'key_doesnotexist')).resolves.toBe(false)
  })

  test('revoking one key leaves the others working', async () => {
    const a = await issueApiKey({ models }, { appDid: did, environment: 'test', permissions: ['app.config.read'] })
    const b = await issueApiKey({ models }, { appDid: did, environment: 'test', permissions: ['app.config.read'] })
    await revokeApiKey({ models }, a.keyId)
    expect(await findActiveKey({ models }, hashApiKey(a.key))).toBeNull()
    expect(await findActiveKey({ models }, hashApiKey(b.key))).toMatchObject({ keyId: b.keyId })
  })
})
