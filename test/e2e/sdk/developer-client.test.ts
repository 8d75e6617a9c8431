/**
 * The SDK's developer client against the real service in-process: a restricted API key's test event, the delivery log
 * and redrives through the adapter's utility routes, the gateway and the events workers, to a webhook receiver.
 */
import { createDeveloperClient, SvcError, type DeliveryLogEntry, type DeveloperClient } from '@svc/sdk'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectOk, updateConfig } from '../adapter/helpers'
import { ALL_PERMISSIONS } from '../adapter/events-helpers'
import { startReceiver, type Receiver } from '../events/helpers/receiver'

let stack: TestStack
let receiver: Receiver
let app: TestApp
let dev: DeveloperClient

beforeAll(async () => {
  stack = await startStack('sdk-developer', { allowLoopbackWebhooks: true })
  receiver = await startReceiver()
  app = await stack.newApp({ environments: ['test', 'live'] })
  expectOk(await updateConfig(stack, app, { environment: 'test', webhookUrl: receiver.url }))
  dev = createDeveloperClient({ checkoutUrl: stack.checkoutUrl, appDid: app.did, apiKey: await app.apiKey('test', ALL_PERMISSIONS) })
})
afterAll(async () => {
  await receiver?.close()
  await stack?.stop()
})

async function logged(deliveryId: string, status: string): Promise<DeliveryLogEntry> {
  for (let i = 0; i < 200; i++) {
    const found = (await dev.listDeliveries({ limit: 100 })).find((d) => d.id === deliveryId)
    if (found?.status === status) return found
    await new Promise((r) => setTimeout(r, 50))
  }
  throw new Error(`delivery ${deliveryId} never became ${status}`)
}

it('sends a test event, finds it delivered in the log, and redrives it to the receiver once more', async () => {
  expect(dev.environment).toBe('test')
  expect(await dev.getConfig()).toMatchObject({ appDid: app.did, environment: 'test', webhook: { configured: true, paused: false } })

  const sent = await dev.sendTestEvent()
  expect(sent).toEqual({ ok: true, environment: 'test', deliveryId: expect.stringMatching(/^whd_/) })
  const delivered = await logged(sent.deliveryId, 'delivered')
  expect(delivered).toMatchObject({ eventType: 'app.webhook.test', attemptCount: 1, attempts: [{ number: 1, outcome: 'delivered', statusCode: 200 }] })
  expect((await dev.listDeliveries({ status: 'delivered', limit: 1 })).map((d) => d.id)).toEqual([sent.deliveryId])
  const before = receiver.requests.length

  expect(await dev.redriveDelivery(sent.deliveryId)).toMatchObject({ ok: true, queued: 1 })
  expect((await logged(sent.deliveryId, 'delivered')).attemptCount).toBe(2)
  expect(receiver.requests.length).toBe(before + 1)
  // nothing failed: a batch redrive of the failed ones queues none
  expect(await dev.redriveFailed({ since: new Date(Date.now() - 3_600_000) })).toMatchObject({ ok: true, queued: 0 })
})

it('answers the contract errors as SvcError, with the route and the request id', async () => {
  const err = await dev.redriveDelivery('whd_00000000000000000000000000000000').catch((e: unknown) => e)
  expect(err).toBeInstanceOf(SvcError)
  expect(err).toMatchObject({ status: 404, error: 'DeliveryNotFound', nsid: 'POST /api/webhooks/atm', requestId: expect.stringMatching(/^req_/) })

  const readOnly = createDeveloperClient({ checkoutUrl: stack.checkoutUrl, appDid: app.did, apiKey: await app.apiKey('test', ['webhook.deliveries.read']) })
  await expect(readOnly.sendTestEvent()).rejects.toMatchObject({ status: 401, error: 'Unauthorized' })
  await expect(readOnly.listDeliveries({ limit: 1 })).resolves.toEqual(expect.any(Array))

  const live = createDeveloperClient({ checkoutUrl: stack.checkoutUrl, appDid: app.did, apiKey: await app.apiKey('live', ALL_PERMISSIONS) })
  expect(live.environment).toBe('live')
  await expect(live.sendTestEvent()).rejects.toMatchObject({ error: 'LiveDeveloperActionUnsupported' })

  expect(() => createDeveloperClient({ checkoutUrl: stack.checkoutUrl, appDid: app.did, apiKey: 'svc_rk_test_nope' })).toThrow(/copied whole/)
  await expect(dev.listDeliveries({ limit: 1000 })).rejects.toMatchObject({ status: 400, error: 'InvalidRequest' })
})
