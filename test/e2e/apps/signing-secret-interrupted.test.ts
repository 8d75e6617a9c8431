/**
 * updateConfig's two writes in two domains (docs/events.md, "Signing secrets"): the apps domain saves the
 * configuration, then has the events domain create the environment's signing secret with its idempotent
 * ensureSigningSecret. Here the second write is cut off (the apps domain's call to the events domain goes to a
 * gateway that is not there, as when the process stops between the two), and the configuration is left saved with
 * its secret pending. The app's next updateConfig, through the whole stack, creates the secret and returns it, once.
 * The same when the events domain made the secret and its answer was lost: the next updateConfig returns that secret.
 */
import { createServer, request as httpRequest, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createGatewayClient } from '@svc/gateway-client'
import { createGraphSigningSecrets, updateAppConfig } from '@svc/apps'
import { activeSigningSecrets, decryptSecret } from '@svc/events'
import { contractError } from '@svc/testing'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectOk, updateConfig } from '../adapter/helpers'

let stack: TestStack
let app: TestApp
const WEBHOOK = 'http://127.0.0.1:9/hooks/svc'
const unreachable = createGatewayClient({ url: 'http://127.0.0.1:1/graphql', signer: { issuer: 'apps', key: 'unused-key' } })

beforeAll(async () => {
  stack = await startStack('signing-secret-interrupted', { workers: false, allowLoopbackWebhooks: true })
  app = await stack.newApp()
})

afterAll(async () => {
  await unreachable.close()
  await stack.stop()
})

const environmentDoc = () => stack.models.AppEnvironment.findOne({ appDid: app.did, environment: 'test' }).lean()
const secretsOf = () => stack.events.SigningSecret.countDocuments({ appDid: app.did, environment: 'test' })

test('cut off between the two writes: the configuration is saved, the secret pending; the next updateConfig creates and returns it once', async () => {
  const interrupted = {
    models: stack.models,
    policy: { allowLoopbackWebhooksInTest: true },
    signingSecrets: createGraphSigningSecrets(unreachable, 'req-interrupted'),
  }
  const err = await contractError(updateAppConfig(interrupted, app.did, { environment: 'test', webhookUrl: WEBHOOK }))
  expect(err.code).toBe('ServiceUnavailable')
  expect((await environmentDoc())?.webhook).toMatchObject({ url: WEBHOOK, signingSecretEnsured: false })
  expect(await secretsOf()).toBe(0)

  // the app retries (here with no change at all): the apps domain sees the secret pending and has it made
  const retried = expectOk(await updateConfig(stack, app, { environment: 'test' }))
  expect(retried.webhook).toMatchObject({ configured: true, url: WEBHOOK, signingSecret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/) })
  expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, app.did, 'test')).toEqual([retried.webhook.signingSecret])
  expect((await environmentDoc())?.webhook?.signingSecretEnsured).toBe(true)

  // given: later updates that do not name the channel's URL answer without it, and no second secret is made
  const later = await Promise.all(Array.from({ length: 5 }, () => updateConfig(stack, app, { environment: 'test', webhookPaused: false })))
  for (const res of later) expect(expectOk(res).webhook).not.toHaveProperty('signingSecret')
  expect(await secretsOf()).toBe(1)
})

test('concurrent first updates of a fresh environment: one secret, the same in every answer that carries it', async () => {
  const fresh = await stack.newApp()
  const answers = await Promise.all(Array.from({ length: 6 }, () => updateConfig(stack, fresh, { environment: 'test', webhookUrl: WEBHOOK })))
  const shown = answers.map((res) => expectOk(res).webhook.signingSecret).filter(Boolean)
  expect(shown.length).toBeGreaterThanOrEqual(1)
  expect(new Set(shown).size).toBe(1)
  expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, fresh.did, 'test')).toEqual([shown[0]])
  expect(expectOk(await updateConfig(stack, fresh, { environment: 'test' })).webhook).not.toHaveProperty('signingSecret')
})

/** A gateway in front of the real one that passes each call on and drops its answer: the call timed out after the work. */
async function answerLosingGateway(target: string): Promise<{ url: string; server: Server; forwarded: () => number }> {
  let forwarded = 0
  const server = createServer((req, res) => {
    const upstream = httpRequest(target, { method: req.method, headers: req.headers }, (answer) => {
      answer.resume()
      answer.on('end', () => {
        forwarded++
        res.destroy()
      })
    })
    req.pipe(upstream)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`, server, forwarded: () => forwarded }
}

test('the events domain made the secret and its answer was lost: the next updateConfig returns that secret', async () => {
  const lost = await stack.newApp()
  const proxy = await answerLosingGateway(stack.gatewayUrl)
  const client = createGatewayClient({ url: proxy.url, signer: { issuer: 'apps', key: stack.secrets.callerKeys.apps } })
  try {
    const cut = { models: stack.models, policy: { allowLoopbackWebhooksInTest: true }, signingSecrets: createGraphSigningSecrets(client, 'req-answer-lost') }
    const err = await contractError(updateAppConfig(cut, lost.did, { environment: 'test', webhookUrl: WEBHOOK }))
    expect(err.code).toBe('ServiceUnavailable')
    expect(proxy.forwarded()).toBeGreaterThanOrEqual(1)
  } finally {
    await client.close()
    await new Promise((resolve) => proxy.server.close(resolve))
  }
  // made, and never shown: the configuration still has it pending
  const stored = await stack.events.SigningSecret.find({ appDid: lost.did, environment: 'test' }).lean()
  expect(stored).toHaveLength(1)
  expect((await stack.models.AppEnvironment.findOne({ appDid: lost.did, environment: 'test' }).lean())?.webhook?.signingSecretEnsured).toBe(false)

  const retried = expectOk(await updateConfig(stack, lost, { environment: 'test' }))
  expect(retried.webhook.signingSecret).toBe(decryptSecret(stack.secrets.webhookSecretKey, stored[0]!))
  expect(expectOk(await updateConfig(stack, lost, { environment: 'test' })).webhook).not.toHaveProperty('signingSecret')
  expect(await stack.events.SigningSecret.countDocuments({ appDid: lost.did, environment: 'test' })).toBe(1)
})
