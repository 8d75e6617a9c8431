/**
 * The apps subgraph's `developerAccess` (the precheck of the test-event, deliveries and redrive routes), through the
 * gateway with an API key principal: its checks in their documented order (known key → app given → key bound to the
 * app and environment → live where refused → permission → configuration exists), the environment defaulting to the
 * key's, and what it answers (app, environment, key prefix, where events go). Also `developerConfig` reporting
 * `configured` for the chosen channel.
 */
import { signedContext } from '@svc/testing'
import type { Principal } from '@svc/internal-context'
import { randomBytes } from 'node:crypto'
import { hashApiKey } from '@svc/api-keys'
import { startStack, type TestApp, type TestStack } from '../../stack'

let stack: TestStack
let app: TestApp

beforeAll(async () => {
  stack = await startStack('apps-developer-access', { workers: false })
  app = await stack.newApp({ environments: ['test', 'live'] })
})
afterAll(async () => {
  await stack?.stop()
})

const ACCESS = `query A($app: String, $environment: String, $permission: String!, $liveAllowed: Boolean) {
  developerAccess(app: $app, environment: $environment, permission: $permission, liveAllowed: $liveAllowed) {
    appDid environment keyPrefix webhook { configured paused channel }
  }
}`

async function gql(caller: Principal, query: string, variables: Record<string, unknown>) {
  const res = await fetch(stack.gatewayUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'svc-context': signedContext(stack.secrets.callerKeys, caller) },
    body: JSON.stringify({ query, variables }),
  })
  return (await res.json()) as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] }
}

async function access(key: string, variables: { app?: string | null; environment?: string | null; permission: string; liveAllowed?: boolean }) {
  const r = await gql({ kind: 'apiKey', keyHash: hashApiKey(key) }, ACCESS, variables)
  return r.errors ? { error: r.errors[0]!.extensions?.code, message: r.errors[0]!.message } : r.data.developerAccess
}

const unknownKey = () => `svc_rk_test_${randomBytes(24).toString('base64url')}`

describe('developerAccess', () => {
  it('answers the checked app environment, the key prefix and where events go; environment defaults to the key', async () => {
    const key = await app.apiKey('test', ['webhook.test.write'])
    const expected = { appDid: app.did, environment: 'test', keyPrefix: key.slice(0, 18), webhook: { configured: false, paused: false, channel: 'webhook' } }
    expect(await access(key, { app: app.did, environment: 'test', permission: 'webhook.test.write', liveAllowed: false })).toEqual(expected)
    expect(await access(key, { app: app.did, permission: 'webhook.test.write', liveAllowed: false })).toEqual(expected)
  })

  it('reports the chosen channel: xrpc with a receiver is configured, paused as set', async () => {
    const other = await stack.newApp()
    await stack.models.AppEnvironment.updateOne(
      { appDid: other.did, environment: 'test' },
      { $set: { 'webhook.channel': 'xrpc', 'webhook.receiverUrl': 'https://93.184.216.34', 'webhook.paused': true } },
    )
    const key = await other.apiKey('test', ['webhook.deliveries.read'])
    expect((await access(key, { app: other.did, permission: 'webhook.deliveries.read' })).webhook).toEqual({ configured: true, paused: true, channel: 'xrpc' })
  })

  it('checks in the documented order', async () => {
    const liveRead = await app.apiKey('live', ['webhook.deliveries.read'])
    const testAll = await app.apiKey('test', ['webhook.test.write', 'webhook.deliveries.read'])
    const gone = await stack.newApp()
    const goneKey = await gone.apiKey('test', ['webhook.test.write'])
    await stack.models.AppEnvironment.deleteOne({ appDid: gone.did, environment: 'test' })

    // 1. an unknown key, even without app, live or permission
    expect(await access(unknownKey(), { permission: 'webhook.test.write', liveAllowed: false })).toMatchObject({ error: 'Unauthorized' })
    // 2. app given, where the contract lists AppRequired (the delivery log); test-event and redrive take the key's app
    expect(await access(testAll, { permission: 'webhook.deliveries.read' })).toMatchObject({ error: 'AppRequired' })
    expect(await access(testAll, { app: '', permission: 'webhook.deliveries.read' })).toMatchObject({ error: 'AppRequired' })
    expect(await access(testAll, { permission: 'webhook.test.write', liveAllowed: false })).toMatchObject({ appDid: app.did, environment: 'test' })
    expect(await access(liveRead, { permission: 'webhook.test.write', liveAllowed: false })).toMatchObject({ error: 'LiveDeveloperActionUnsupported' })
    // 3. bound to app and environment (before live and permission)
    expect(await access(liveRead, { app: gone.did, permission: 'webhook.test.write', liveAllowed: false })).toMatchObject({ error: 'Unauthorized' })
    expect(await access(testAll, { app: app.did, environment: 'live', permission: 'webhook.test.write', liveAllowed: false })).toMatchObject({ error: 'Unauthorized' })
    // 4. live refused (before the permission: this live key lacks webhook.test.write)
    expect(await access(liveRead, { app: app.did, permission: 'webhook.test.write', liveAllowed: false })).toMatchObject({ error: 'LiveDeveloperActionUnsupported' })
    expect(await access(liveRead, { app: app.did, environment: 'live', permission: 'webhook.test.write', liveAllowed: false })).toMatchObject({ error: 'LiveDeveloperActionUnsupported' })
    // live allowed: then the permission decides
    expect(await access(liveRead, { app: app.did, permission: 'webhook.test.write', liveAllowed: true })).toMatchObject({ error: 'Unauthorized', message: expect.stringMatching(/webhook\.test\.write/) })
    expect(await access(liveRead, { app: app.did, permission: 'webhook.deliveries.read' })).toMatchObject({ appDid: app.did, environment: 'live' })
    // 5. permission
    expect(await access(testAll, { app: app.did, permission: 'webhook.deliveries.redrive' })).toMatchObject({ error: 'Unauthorized' })
    // 6. configuration exists
    expect(await access(goneKey, { app: gone.did, permission: 'webhook.test.write', liveAllowed: false })).toMatchObject({ error: 'AppConfigNotFound' })
  })

  it('a revoked key is Unauthorized; an unknown permission name is InvalidRequest', async () => {
    const key = await app.apiKey('test', ['webhook.deliveries.read'])
    expect(await access(key, { app: app.did, permission: 'webhook.everything' })).toMatchObject({ error: 'InvalidRequest' })
    await stack.models.ApiKey.updateOne({ keyHash: hashApiKey(key) }, { $set: { revokedAt: new Date() } })
    expect(await access(key, { app: app.did, permission: 'webhook.deliveries.read' })).toMatchObject({ error: 'Unauthorized' })
  })

  it('is for API key principals only', async () => {
    const vars = { app: app.did, permission: 'webhook.deliveries.read' }
    for (const caller of <Principal[]>[{ kind: 'app', appDid: app.did }, { kind: 'service', name: 'xrpc-adapter' }]) {
      expect((await gql(caller, ACCESS, vars)).errors?.[0]?.extensions?.code).toBe('NotAllowed')
    }
  })
})

describe('developerConfig', () => {
  it('configured follows the chosen channel', async () => {
    const other = await stack.newApp()
    const key = await other.apiKey('test')
    const q = `query($app: String) { developerConfig(app: $app) { webhook { configured paused channel } } }`
    const read = async () => (await gql({ kind: 'apiKey', keyHash: hashApiKey(key) }, q, { app: other.did })).data.developerConfig.webhook
    expect(await read()).toEqual({ configured: false, paused: false, channel: 'webhook' })
    await stack.models.AppEnvironment.updateOne({ appDid: other.did, environment: 'test' }, { $set: { 'webhook.url': 'https://93.184.216.34/h', 'webhook.channel': 'xrpc' } })
    expect(await read()).toEqual({ configured: false, paused: false, channel: 'xrpc' })
    await stack.models.AppEnvironment.updateOne({ appDid: other.did, environment: 'test' }, { $set: { 'webhook.receiverUrl': 'https://93.184.216.34' } })
    expect(await read()).toEqual({ configured: true, paused: false, channel: 'xrpc' })
  })
})
