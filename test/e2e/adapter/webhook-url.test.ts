/**
 * updateConfig webhookUrl rules (400 WebhookUrlNotAllowed, nothing changed), in test and live, with and
 * without the development setting that lets loopback receivers through in test.
 */
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectError, expectOk, freshConfig, getConfig, updateConfig } from './helpers'
import type { Environment } from '@svc/vocabulary'

let stack: TestStack
let devStack: TestStack

beforeAll(async () => {
  stack = await startStack('webhook-url')
  devStack = await startStack('webhook-url-dev', { allowLoopbackWebhooks: true })
})
afterAll(async () => {
  await Promise.allSettled([stack?.stop(), devStack?.stop()])
})

async function expectRefused(s: TestStack, app: TestApp, environment: Environment, webhookUrl: string) {
  const res = await updateConfig(s, app, { environment, webhookUrl, modules: { tickets: true } })
  expectError(res, 400, 'WebhookUrlNotAllowed')
  // nothing changed, not even the other field of the same request
  expect(expectOk(await getConfig(s, app, environment))).toEqual(freshConfig(app.did, environment))
}

async function expectAccepted(s: TestStack, app: TestApp, environment: Environment, webhookUrl: string, stored = webhookUrl) {
  const res = expectOk(await updateConfig(s, app, { environment, webhookUrl }))
  expect(res.webhook).toMatchObject({ configured: true, paused: false })
  expect(res.environment).toBe(environment)
  const read = expectOk(await getConfig(s, app, environment))
  expect(read).toEqual({ ...freshConfig(app.did, environment), webhook: { configured: true, url: stored, paused: false, channel: 'webhook' } })
}

describe('without the development setting', () => {
  it.each([
    ['test', 'http://127.0.0.1/hook'],
    ['test', 'http://localhost/hook'],
    ['test', 'https://localhost/hook'],
    ['test', 'http://api.localhost/hook'],
    ['test', 'http://localhost./hook'],
    ['test', 'https://api.localhost./hook'],
    ['test', 'https://[::1]/x'],
    ['test', 'http://127.0.0.2:8080/hook'],
    ['test', 'http://[::ffff:127.0.0.1]/hook'],
    ['test', 'http://2130706433/hook'],
    ['test', 'https://10.0.0.5/hook'],
    ['test', 'https://169.254.169.254/x'],
    ['test', 'https://192.168.1.10/hook'],
    ['test', 'https://172.16.0.1/hook'],
    ['test', 'https://100.64.0.1/hook'],
    ['test', 'https://0.0.0.0/hook'],
    ['test', 'https://[fd00::1]/hook'],
    ['test', 'https://[fe80::1]/hook'],
    ['test', 'https://[::ffff:10.0.0.5]/hook'],
    ['test', 'ftp://93.184.216.34/hook'],
    ['test', 'file://93.184.216.34/etc/passwd'],
    ['test', 'javascript:alert(1)'],
    ['test', 'gopher://93.184.216.34:70/_x'],
    ['test', 'https://user:pass@93.184.216.34/hook'],
    ['live', 'http://127.0.0.1/hook'],
    ['live', 'http://localhost/hook'],
    ['live', 'https://localhost./hook'],
    ['live', 'https://10.0.0.5/hook'],
    ['live', 'https://169.254.169.254/x'],
    ['live', 'https://[::1]/x'],
    ['live', 'http://93.184.216.34/hook'],
    ['live', 'ftp://93.184.216.34/hook'],
    ['test', `https://93.184.216.34/${'p'.repeat(2030)}`],
    ['test', `http://${'a'.repeat(250)}.com/hook`],
  ] as const)('%s: %s is 400 WebhookUrlNotAllowed and nothing changes', async (environment, url) => {
    const app = await stack.newApp({ environments: [environment] })
    await expectRefused(stack, app, environment, url)
  })

  it('live: https://93.184.216.34/hook is accepted', async () => {
    const app = await stack.newApp({ environments: ['live'] })
    await expectAccepted(stack, app, 'live', 'https://93.184.216.34/hook')
  })

  it('test: http://93.184.216.34/hook is accepted', async () => {
    const app = await stack.newApp({ environments: ['test'] })
    await expectAccepted(stack, app, 'test', 'http://93.184.216.34/hook')
  })

  it('test: https://93.184.216.34:8443/svc/hook?x=1 is accepted as given', async () => {
    const app = await stack.newApp({ environments: ['test'] })
    await expectAccepted(stack, app, 'test', 'https://93.184.216.34:8443/svc/hook?x=1')
  })

  it('a refused URL keeps the webhook configured earlier', async () => {
    const app = await stack.newApp({ environments: ['live'] })
    await expectAccepted(stack, app, 'live', 'https://93.184.216.34/hook')
    expectError(await updateConfig(stack, app, { environment: 'live', webhookUrl: 'https://10.0.0.5/hook' }), 400, 'WebhookUrlNotAllowed')
    expectError(await updateConfig(stack, app, { environment: 'live', webhookUrl: 'http://93.184.216.34/hook' }), 400, 'WebhookUrlNotAllowed')
    const read = expectOk(await getConfig(stack, app, 'live'))
    expect(read.webhook).toEqual({ configured: true, url: 'https://93.184.216.34/hook', paused: false, channel: 'webhook' })
  })

  it('the last accepted webhook URL wins', async () => {
    const app = await stack.newApp({ environments: ['test'] })
    await expectAccepted(stack, app, 'test', 'https://93.184.216.34/one')
    await expectAccepted(stack, app, 'test', 'https://93.184.216.34/two')
  })
})

describe('with the development setting (allowLoopbackWebhooks)', () => {
  it.each(['http://127.0.0.1/hook', 'http://localhost/hook', 'http://localhost./hook', 'http://127.0.0.1:3000/webhooks/svc', 'https://[::1]/x'])(
    'test: loopback %s is accepted',
    async (url) => {
      const app = await devStack.newApp({ environments: ['test'] })
      const stored = new URL(url).toString()
      await expectAccepted(devStack, app, 'test', url, stored)
    },
  )

  it.each(['http://127.0.0.1/hook', 'http://localhost/hook', 'https://localhost./hook', 'https://127.0.0.1/hook', 'https://[::1]/x'])(
    'live: loopback %s is still 400 WebhookUrlNotAllowed',
    async (url) => {
      const app = await devStack.newApp({ environments: ['live'] })
      await expectRefused(devStack, app, 'live', url)
    },
  )

  it.each(['https://10.0.0.5/hook', 'https://169.254.169.254/x', 'https://192.168.1.10/hook'])(
    'test: private non-loopback %s is still 400 WebhookUrlNotAllowed',
    async (url) => {
      const app = await devStack.newApp({ environments: ['test'] })
      await expectRefused(devStack, app, 'test', url)
    },
  )

  it('the setting does not leak into a stack started without it', async () => {
    const app = await stack.newApp({ environments: ['test'] })
    await expectRefused(stack, app, 'test', 'http://127.0.0.1:3000/webhooks/svc')
  })
})

describe('removing the webhook URL', () => {
  it('removeWebhookUrl takes the URL away (not configured); with webhookUrl in the same call it is refused and nothing changes', async () => {
    const app = await stack.newApp()
    await expectAccepted(stack, app, 'test', 'https://93.184.216.34/hook')

    const both = await updateConfig(stack, app, { environment: 'test', webhookUrl: 'https://93.184.216.34/other', removeWebhookUrl: true })
    expectError(both, 400, 'InvalidRequest', /either webhookUrl or removeWebhookUrl/)
    expect(expectOk(await getConfig(stack, app, 'test')).webhook).toMatchObject({ configured: true, url: 'https://93.184.216.34/hook' })

    const removed = expectOk(await updateConfig(stack, app, { environment: 'test', removeWebhookUrl: true }))
    expect(removed.webhook).toMatchObject({ configured: false, paused: false })
    expect(expectOk(await getConfig(stack, app, 'test'))).toEqual(freshConfig(app.did, 'test'))
    // false (or absent) leaves the URL as it is
    await expectAccepted(stack, app, 'test', 'https://93.184.216.34/again')
    expect(expectOk(await updateConfig(stack, app, { environment: 'test', removeWebhookUrl: false })).webhook).toMatchObject({ configured: true })
  })
})
