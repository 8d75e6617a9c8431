/**
 * money.svc.app.updateConfig's event fields (docs/events.md, "Channels", "Signing secrets"): eventChannel,
 * receiverUrl and webhookPaused round-trip through getConfig (webhook.channel, webhook.receiverUrl, webhook.paused,
 * webhook.configured for the chosen channel), their refusals change nothing, and the first update that leaves a
 * channel configured returns the app environment's signing secret exactly once (also under 10 parallel calls),
 * stored encrypted, separately per environment.
 */
import { decryptSecret } from '@svc/events'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, freshConfig, getConfig, httpRequest, UPDATE_CONFIG, updateConfig, xrpcPost } from './helpers'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('event-config', { workers: false })
})
afterAll(async () => {
  await stack?.stop()
})

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/

async function readWebhook(app: TestApp, environment: 'test' | 'live' = 'test') {
  return expectOk(await getConfig(stack, app, environment)).webhook
}

describe('channels round-trip through getConfig', () => {
  it('a new configuration is the webhook channel, not configured, not paused', async () => {
    const app = await stack.newApp()
    expect(await readWebhook(app)).toEqual({ configured: false, paused: false, channel: 'webhook' })
  })

  it('eventChannel xrpc with a receiverUrl: configured, channel and receiverUrl reported, stored as the origin', async () => {
    const app = await stack.newApp()
    const res = expectOk(await updateConfig(stack, app, { environment: 'test', eventChannel: 'xrpc', receiverUrl: 'https://93.184.216.34/' }))
    expect(res.webhook).toEqual({ configured: true, paused: false, channel: 'xrpc', receiverUrl: 'https://93.184.216.34', signingSecret: expect.stringMatching(SECRET) })
    expect(await readWebhook(app)).toEqual({ configured: true, paused: false, channel: 'xrpc', receiverUrl: 'https://93.184.216.34' })
  })

  it('configured follows the chosen channel: xrpc without a receiver is not configured even with a webhook URL', async () => {
    const app = await stack.newApp()
    expectOk(await updateConfig(stack, app, { environment: 'test', webhookUrl: 'https://93.184.216.34/hook' }))
    expect(await readWebhook(app)).toEqual({ configured: true, url: 'https://93.184.216.34/hook', paused: false, channel: 'webhook' })
    const switched = expectOk(await updateConfig(stack, app, { environment: 'test', eventChannel: 'xrpc' }))
    expect(switched.webhook).toEqual({ configured: false, url: 'https://93.184.216.34/hook', paused: false, channel: 'xrpc' })
    expectOk(await updateConfig(stack, app, { environment: 'test', receiverUrl: 'https://93.184.216.34:8443' }))
    expect(await readWebhook(app)).toEqual({ configured: true, url: 'https://93.184.216.34/hook', paused: false, channel: 'xrpc', receiverUrl: 'https://93.184.216.34:8443' })
    // back to the webhook: the receiver is kept, the webhook URL configures
    expectOk(await updateConfig(stack, app, { environment: 'test', eventChannel: 'webhook' }))
    expect(await readWebhook(app)).toEqual({ configured: true, url: 'https://93.184.216.34/hook', paused: false, channel: 'webhook', receiverUrl: 'https://93.184.216.34:8443' })
  })

  it('webhookPaused true holds, false releases; omitted keeps the value', async () => {
    const app = await stack.newApp()
    expect(expectOk(await updateConfig(stack, app, { environment: 'test', webhookPaused: true })).webhook).toEqual({ configured: false, paused: true, channel: 'webhook' })
    expectOk(await updateConfig(stack, app, { environment: 'test', modules: { tickets: true } }))
    expect((await readWebhook(app)).paused).toBe(true)
    expectOk(await updateConfig(stack, app, { environment: 'test', webhookPaused: false }))
    expect((await readWebhook(app)).paused).toBe(false)
  })

  it('the developer configuration reports configured for the chosen channel', async () => {
    const app = await stack.newApp()
    const key = await app.apiKey('test')
    expectOk(await updateConfig(stack, app, { environment: 'test', eventChannel: 'xrpc', receiverUrl: 'https://93.184.216.34', webhookPaused: true }))
    const res = await httpRequest(`${stack.checkoutUrl}/api/app/developer/config?app=${encodeURIComponent(app.did)}`, { headers: bearer(key) })
    expect(expectOk(res).webhook).toEqual({ configured: true, paused: true, disabled: null })
  })

  it('test and live are separate', async () => {
    const app = await stack.newApp({ environments: ['test', 'live'] })
    expectOk(await updateConfig(stack, app, { environment: 'live', eventChannel: 'xrpc', receiverUrl: 'https://93.184.216.34', webhookPaused: true }))
    expect(await readWebhook(app, 'test')).toEqual({ configured: false, paused: false, channel: 'webhook' })
    expect(await readWebhook(app, 'live')).toEqual({ configured: true, paused: true, channel: 'xrpc', receiverUrl: 'https://93.184.216.34' })
  })
})

describe('refusals change nothing', () => {
  it.each<[string, Record<string, unknown>, number, string, RegExp]>([
    ['an unknown channel', { eventChannel: 'sms' }, 400, 'InvalidRequest', /eventChannel/],
    ['a channel in capitals', { eventChannel: 'XRPC' }, 400, 'InvalidRequest', /eventChannel/],
    ['a non-string channel', { eventChannel: 1 }, 400, 'InvalidRequest', /eventChannel/],
    ['a receiverUrl that is not a URL', { receiverUrl: 'receiver' }, 400, 'InvalidRequest', /receiverUrl/],
    ['a private receiverUrl', { receiverUrl: 'https://10.0.0.5' }, 400, 'WebhookUrlNotAllowed', /./],
    ['a loopback receiverUrl', { receiverUrl: 'http://127.0.0.1:3000' }, 400, 'WebhookUrlNotAllowed', /./],
    ['a metadata receiverUrl', { receiverUrl: 'http://169.254.169.254' }, 400, 'WebhookUrlNotAllowed', /./],
    ['a receiverUrl with a path', { receiverUrl: 'https://93.184.216.34/xrpc' }, 400, 'WebhookUrlNotAllowed', /origin/],
    ['a receiverUrl with a query', { receiverUrl: 'https://93.184.216.34/?a=1' }, 400, 'WebhookUrlNotAllowed', /origin/],
    ['a receiverUrl with credentials', { receiverUrl: 'https://u:p@93.184.216.34' }, 400, 'WebhookUrlNotAllowed', /./],
    ['an ftp receiverUrl', { receiverUrl: 'ftp://93.184.216.34' }, 400, 'WebhookUrlNotAllowed', /./],
    ['a non-boolean webhookPaused', { webhookPaused: 'yes' }, 400, 'InvalidRequest', /webhookPaused/],
  ])('%s', async (_label, fields, status, code, message) => {
    const app = await stack.newApp()
    // a valid field beside the refused one is not applied either
    const res = await updateConfig(stack, app, { environment: 'test', modules: { tickets: true }, ...fields })
    expectError(res, status, code, message)
    expect(expectOk(await getConfig(stack, app, 'test'))).toEqual(freshConfig(app.did, 'test'))
    expect(await stack.events.SigningSecret.countDocuments({ appDid: app.did })).toBe(0)
  })

  it('http receivers are refused in live', async () => {
    const app = await stack.newApp({ environments: ['live'] })
    expectError(await updateConfig(stack, app, { environment: 'live', receiverUrl: 'http://93.184.216.34' }), 400, 'WebhookUrlNotAllowed')
    expectOk(await updateConfig(stack, app, { environment: 'live', receiverUrl: 'https://93.184.216.34' }))
  })
})

describe('signing secret: created with the configuration, shown with the updates that name the channel', () => {
  it('the first update that configures a channel returns it; later responses and getConfig never do', async () => {
    const app = await stack.newApp()
    const none = expectOk(await updateConfig(stack, app, { environment: 'test', modules: { tickets: true } }))
    expect(none.webhook).toEqual({ configured: false, paused: false, channel: 'webhook' })
    expect(await stack.events.SigningSecret.countDocuments({ appDid: app.did })).toBe(0)

    const first = expectOk(await updateConfig(stack, app, { environment: 'test', webhookUrl: 'https://93.184.216.34/hook' }))
    expect(first.webhook).toEqual({ configured: true, url: 'https://93.184.216.34/hook', paused: false, channel: 'webhook', signingSecret: expect.stringMatching(SECRET) })
    const secret: string = first.webhook.signingSecret

    // an update that names the channel or its URL (a retry of the first one, whose answer may have been lost) gets
    // the same secret again; any other update answers without it
    for (const body of [
      { environment: 'test', webhookUrl: 'https://93.184.216.34/hook' },
      { environment: 'test', webhookUrl: 'https://93.184.216.34/other' },
      { environment: 'test', eventChannel: 'xrpc', receiverUrl: 'https://93.184.216.34' },
      // a switch of channel alone (to a receiver, or back to the webhook, whose URLs earlier updates set)
      { environment: 'test', eventChannel: 'webhook' },
      { environment: 'test', eventChannel: 'xrpc' },
    ]) {
      expect(expectOk(await updateConfig(stack, app, body)).webhook.signingSecret).toBe(secret)
    }
    for (const body of [{ environment: 'test' }, { environment: 'test', webhookPaused: false }, { environment: 'test', modules: { tickets: false } }]) {
      const again = expectOk(await updateConfig(stack, app, body))
      expect(again.webhook.signingSecret).toBeUndefined()
      expect(JSON.stringify(again)).not.toContain(secret)
    }
    expect(JSON.stringify(expectOk(await getConfig(stack, app, 'test')))).not.toContain('whsec_')

    // stored once, encrypted: only the hint is readable, and it decrypts to what was shown
    const stored = await stack.events.SigningSecret.find({ appDid: app.did }).lean()
    expect(stored).toHaveLength(1)
    expect(stored[0]).toMatchObject({ environment: 'test', generation: 1, hint: secret.slice(-4), expiresAt: null })
    expect(JSON.stringify(stored)).not.toContain(secret)
    expect(decryptSecret(stack.secrets.webhookSecretKey, stored[0]!)).toBe(secret)
    // never in the request log either
    expect(JSON.stringify(await stack.models.RequestLog.find({}).lean())).not.toContain(secret)
  })

  it('10 parallel first updates: one secret exists, and every response carries it', async () => {
    const app = await stack.newApp()
    const tokens = await Promise.all(Array.from({ length: 10 }, () => app.jwt(UPDATE_CONFIG)))
    const body = { environment: 'test', webhookUrl: 'https://93.184.216.34/hook' }
    const results = await Promise.all(tokens.map((t) => xrpcPost(stack, UPDATE_CONFIG, body, bearer(t))))
    const secrets = results.map((r) => expectOk(r).webhook.signingSecret)
    expect(secrets.every((secret) => typeof secret === 'string' && SECRET.test(secret))).toBe(true)
    expect(new Set(secrets).size).toBe(1)
    expect(secrets[0]).toMatch(SECRET)
    const stored = await stack.events.SigningSecret.find({ appDid: app.did, environment: 'test' }).lean()
    expect(stored).toHaveLength(1)
    expect(decryptSecret(stack.secrets.webhookSecretKey, stored[0]!)).toBe(secrets[0])
  })

  it('test and live each get their own secret', async () => {
    const app = await stack.newApp({ environments: ['test', 'live'] })
    const t = expectOk(await updateConfig(stack, app, { environment: 'test', webhookUrl: 'https://93.184.216.34/hook' })).webhook.signingSecret
    const l = expectOk(await updateConfig(stack, app, { environment: 'live', webhookUrl: 'https://93.184.216.34/hook' })).webhook.signingSecret
    expect(t).toMatch(SECRET)
    expect(l).toMatch(SECRET)
    expect(t).not.toBe(l)
    expect(expectOk(await updateConfig(stack, app, { environment: 'live', webhookPaused: true })).webhook.signingSecret).toBeUndefined()
  })

  it('a refused update creates no secret', async () => {
    const app = await stack.newApp()
    expectError(await updateConfig(stack, app, { environment: 'test', webhookUrl: 'https://10.0.0.1/hook' }), 400, 'WebhookUrlNotAllowed')
    expect(await stack.events.SigningSecret.countDocuments({ appDid: app.did })).toBe(0)
  })
})
