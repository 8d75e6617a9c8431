/**
 * updateAppConfig's event fields on the test FerretDB (docs/events.md, "Channels"): eventChannel (webhook | xrpc,
 * else InvalidRequest), receiverUrl (the webhookUrl policy, stored as the origin; a path or query is refused),
 * webhookPaused; a refusal changes nothing; `webhook.configured` and eventEndpointOf follow the chosen channel.
 */
import type mongoose from 'mongoose'
import { contractError, isolate } from '@svc/testing'
import { connectApps, type AppsModels } from '../src'
import { registerApp } from '../src/domain/registration'
import type { UpdatePolicy } from '../src/domain/context'
import { findAppEnvironment } from '../src/domain/app-environment'
import { disableEventEndpoint, eventEndpointOf } from '../src/domain/event-endpoint'
import { getAppConfig } from '../src/domain/get-app-config'
import { updateAppConfig } from '../src/domain/update-app-config'
import type { SigningSecrets } from '../src/domain/signing-secrets'

/** The events domain's answer in these domain tests: the environment's signing secret exists already. */
const secretsMade: SigningSecrets = { ensure: async () => ({ secret: null }) }

let conn: mongoose.Connection
let models: AppsModels
let seq = 0
const policy: UpdatePolicy = { allowLoopbackWebhooksInTest: false, resolve: async () => ['93.184.216.34'] }

async function newApp(environment: 'test' | 'live' = 'test'): Promise<string> {
  const did = `did:web:channel${++seq}-${Date.now().toString(36)}.example.com`
  await registerApp({ models }, { did, environment, appUrl: 'https://app.example.com', feeShareBps: 0 })
  return did
}


beforeAll(async () => {
  ;({ conn, models } = await connectApps(isolate('apps_event_channel').mongoUrl))
})
afterAll(async () => {
  await conn?.dropDatabase().catch(() => undefined)
  await conn?.close()
})

it('a new configuration: webhook channel, nothing configured, not paused', async () => {
  const did = await newApp()
  expect((await getAppConfig({ models }, did, 'test')).webhook).toEqual({ configured: false, url: null, paused: false, channel: 'webhook', receiverUrl: null })
  expect(eventEndpointOf(await findAppEnvironment({ models }, did, 'test'))).toEqual({ appDid: did, environment: 'test', channel: 'webhook', url: null, configured: false, paused: false })
})

it('xrpc with a receiver origin; the endpoint is the receiver; switching back uses the webhook URL', async () => {
  const did = await newApp()
  const view = await updateAppConfig({ models, policy, signingSecrets: secretsMade }, did, { environment: 'test', eventChannel: 'xrpc', receiverUrl: 'https://receiver.example.com/' })
  expect(view.config.webhook).toEqual({ configured: true, url: null, paused: false, channel: 'xrpc', receiverUrl: 'https://receiver.example.com' })
  expect(eventEndpointOf(await findAppEnvironment({ models }, did, 'test'))).toMatchObject({ channel: 'xrpc', url: 'https://receiver.example.com', configured: true })
  const back = await updateAppConfig({ models, policy, signingSecrets: secretsMade }, did, { environment: 'test', eventChannel: 'webhook', webhookUrl: 'https://hooks.example.com/svc', webhookPaused: true })
  expect(back.config.webhook).toEqual({ configured: true, url: 'https://hooks.example.com/svc', paused: true, channel: 'webhook', receiverUrl: 'https://receiver.example.com' })
  expect(eventEndpointOf(await findAppEnvironment({ models }, did, 'test'))).toMatchObject({ channel: 'webhook', url: 'https://hooks.example.com/svc', paused: true })
})

it('a port is kept in the origin; loopback receivers only with the development setting, in test', async () => {
  const did = await newApp()
  expect((await updateAppConfig({ models, policy, signingSecrets: secretsMade }, did, { environment: 'test', receiverUrl: 'https://receiver.example.com:8443' })).config.webhook.receiverUrl).toBe(
    'https://receiver.example.com:8443',
  )
  expect((await contractError(updateAppConfig({ models, policy, signingSecrets: secretsMade }, did, { environment: 'test', receiverUrl: 'http://127.0.0.1:3000' }))).code).toBe('WebhookUrlNotAllowed')
  const dev = { ...policy, allowLoopbackWebhooksInTest: true }
  expect((await updateAppConfig({ models, policy: dev, signingSecrets: secretsMade }, did, { environment: 'test', receiverUrl: 'http://127.0.0.1:3000' })).config.webhook.receiverUrl).toBe('http://127.0.0.1:3000')
})

it.each<[string, Record<string, unknown>, string]>([
  ['an unknown channel', { eventChannel: 'email' }, 'InvalidRequest'],
  ['a receiver with a path', { receiverUrl: 'https://receiver.example.com/xrpc' }, 'WebhookUrlNotAllowed'],
  ['a receiver with a query', { receiverUrl: 'https://receiver.example.com/?x=1' }, 'WebhookUrlNotAllowed'],
  ['a receiver resolving to a private address', { receiverUrl: 'https://10.1.2.3' }, 'WebhookUrlNotAllowed'],
  ['a receiver that is not a URL', { receiverUrl: 'nope' }, 'WebhookUrlNotAllowed'],
])('%s is %s and nothing changes', async (_label, fields, code) => {
  const did = await newApp()
  const before = await getAppConfig({ models }, did, 'test')
  const err = await contractError(updateAppConfig({ models, policy, signingSecrets: secretsMade }, did, { environment: 'test', webhookPaused: true, modules: { tickets: true }, ...fields }))
  expect(err.code).toBe(code)
  const after = await getAppConfig({ models }, did, 'test')
  expect({ ...after, updatedAt: before.updatedAt }).toEqual(before)
})

it('http receivers are refused in live', async () => {
  const did = await newApp('live')
  expect((await contractError(updateAppConfig({ models, policy, signingSecrets: secretsMade }, did, { environment: 'live', receiverUrl: 'http://receiver.example.com' }))).code).toBe('WebhookUrlNotAllowed')
})

it('the workers disable an endpoint only while its URL is the one that failed: an app that moved keeps its new URL enabled', async () => {
  const did = await newApp()
  const deps = { models, policy, signingSecrets: secretsMade }
  await updateAppConfig(deps, did, { environment: 'test', webhookUrl: 'https://old.example.com/hook' })
  await updateAppConfig(deps, did, { environment: 'test', webhookUrl: 'https://new.example.com/hook' })
  // an attempt in flight to the old URL answered 410
  expect(await disableEventEndpoint({ models }, did, 'test', 'gone', 'https://old.example.com/hook')).toMatchObject({ url: 'https://new.example.com/hook', paused: false })
  expect((await findAppEnvironment({ models }, did, 'test')).webhook?.disabledReason ?? null).toBeNull()
  expect(await disableEventEndpoint({ models }, did, 'test', 'gone', 'https://new.example.com/hook')).toMatchObject({ paused: true })
  expect((await findAppEnvironment({ models }, did, 'test')).webhook?.disabledReason).toBe('gone')
})

it("writes of one app environment take turns: an app's updates of different fields, the workers' disable and an operator's registration running at once all stay", async () => {
  const deps = { models, policy, signingSecrets: secretsMade }
  for (let round = 0; round < 8; round++) {
    const did = await newApp()
    await updateAppConfig(deps, did, { environment: 'test', webhookUrl: 'https://hooks.example.com/svc' })
    await Promise.all([
      updateAppConfig(deps, did, { environment: 'test', modules: { tickets: true } }),
      updateAppConfig(deps, did, { environment: 'test', ticketing: { qrPasses: true } }),
      disableEventEndpoint({ models }, did, 'test', 'gone', 'https://hooks.example.com/svc'),
      registerApp({ models }, { did, environment: 'test', appUrl: 'https://app.example.com', feeShareBps: 125 }),
    ])
    const stored = await findAppEnvironment({ models }, did, 'test')
    expect({ round, tickets: stored.modules?.tickets, qrPasses: stored.ticketing?.qrPasses, disabled: stored.webhook?.disabledReason, paused: stored.webhook?.paused, feeShareBps: stored.feeShareBps }).toEqual({
      round,
      tickets: true,
      qrPasses: true,
      disabled: 'gone',
      paused: true,
      feeShareBps: 125,
    })
  }
})
