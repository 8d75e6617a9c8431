/**
 * updateConfig's two writes in two domains (docs/events.md, "Signing secrets"): the apps domain saves the
 * configuration, then has the events domain create the environment's signing secret with its idempotent
 * ensureSigningSecret. Here the second write is cut off (the apps domain's call to the events domain goes to a
 * gateway that is not there, as when the process stops between the two), and the configuration is left saved with
 * its secret pending. The app's next updateConfig, through the whole stack, creates the secret and returns it, once.
 */
import { createGatewayClient } from '@svc/gateway-client'
import { createGraphSigningSecrets, updateAppConfig } from '@svc/apps'
import { activeSigningSecrets } from '@svc/events'
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

  // shown once: every later update answers without it, and no second secret is made
  const later = await Promise.all(Array.from({ length: 5 }, () => updateConfig(stack, app, { environment: 'test', webhookPaused: false })))
  for (const res of later) expect(expectOk(res).webhook).not.toHaveProperty('signingSecret')
  expect(await secretsOf()).toBe(1)
})

test('concurrent first updates of a fresh environment: one secret, shown to exactly one of them', async () => {
  const fresh = await stack.newApp()
  const answers = await Promise.all(Array.from({ length: 6 }, () => updateConfig(stack, fresh, { environment: 'test', webhookUrl: WEBHOOK })))
  const shown = answers.map((res) => expectOk(res).webhook.signingSecret).filter(Boolean)
  expect(shown).toHaveLength(1)
  expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, fresh.did, 'test')).toEqual(shown)
})
