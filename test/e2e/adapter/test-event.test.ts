/**
 * POST {checkout_url}/api/app/developer/test-event: each call creates and queues a new `app.webhook.test` delivery
 * (a delivery document and a BullMQ job with the delivery id), answers `{ok, environment, deliveryId}`, and needs a
 * configured channel (400 WebhookNotConfigured otherwise). The stack runs no event workers, so what is checked is what
 * the route leaves behind: the delivery and its waiting job.
 */
import type { Queue } from 'bullmq'
import { DELIVERY_ID_RE, MAX_ATTEMPTS, TEST_EVENT_TYPE, type DeliveryJob } from '@svc/events'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, httpRequest, updateConfig } from './helpers'
import { checkoutUrl, closeQueue, deliveriesQueue, jobState, TEST_EVENT_PATH, testEvent } from './events-helpers'

let stack: TestStack
let queue: Queue<DeliveryJob>

beforeAll(async () => {
  stack = await startStack('test-event', { workers: false })
  queue = deliveriesQueue(stack)
})
afterAll(async () => {
  await closeQueue(queue)
  await stack?.stop()
})

async function configuredApp(body: Record<string, unknown> = { webhookUrl: 'https://93.184.216.34/hook' }): Promise<{ app: TestApp; key: string }> {
  const app = await stack.newApp({ environments: ['test', 'live'] })
  expectOk(await updateConfig(stack, app, { environment: 'test', ...body }))
  return { app, key: await app.apiKey('test', ['webhook.test.write']) }
}

describe('success', () => {
  it('creates one pending app.webhook.test delivery with its waiting job, and answers its id', async () => {
    const { app, key } = await configuredApp()
    const before = Date.now()
    const res = await testEvent(stack, { app: app.did, environment: 'test' }, bearer(key))
    const body = expectOk(res)
    expect(body).toEqual({ ok: true, environment: 'test', deliveryId: expect.stringMatching(DELIVERY_ID_RE) })
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)

    const doc = await stack.events.Delivery.findById(body.deliveryId).lean()
    expect(doc).toMatchObject({ appDid: app.did, environment: 'test', eventType: TEST_EVENT_TYPE, source: 'test', status: 'pending', attemptCount: 0, run: 1, eventId: null })
    const envelope = JSON.parse(doc!.body)
    expect(Object.keys(envelope)).toEqual(['id', 'type', 'createdAt', 'apiVersion', 'environment', 'data'])
    expect(envelope).toEqual({
      id: body.deliveryId,
      type: 'app.webhook.test',
      createdAt: expect.any(String),
      apiVersion: '2026-06',
      environment: 'test',
      data: { test: true, message: expect.stringMatching(/does not fulfil anything/), requestedAt: envelope.createdAt },
    })
    expect(Date.parse(envelope.createdAt)).toBeGreaterThanOrEqual(before - 1000)

    const job = await queue.getJob(body.deliveryId)
    // the job carries what its attempts send: the stored envelope, byte for byte, and the first attempt's number
    expect(job?.data).toEqual({ deliveryId: body.deliveryId, appDid: app.did, environment: 'test', body: doc!.body, run: 1, next: 1, firstOfRun: 1, inFlight: null, interrupted: [], sendBefore: null })
    expect(job?.opts.attempts).toBe(MAX_ATTEMPTS)
    expect(await job!.getState()).toBe('waiting')
  })

  it('without environment the key environment (test) is used', async () => {
    const { app, key } = await configuredApp()
    expect(expectOk(await testEvent(stack, { app: app.did }, bearer(key)))).toMatchObject({ ok: true, environment: 'test' })
  })

  it('every call is a new delivery: 20 parallel calls make 20 distinct deliveries and 20 jobs', async () => {
    const { app, key } = await configuredApp()
    const results = await Promise.all(Array.from({ length: 20 }, () => testEvent(stack, { app: app.did, environment: 'test' }, bearer(key))))
    const ids = results.map((r) => expectOk(r).deliveryId as string)
    expect(new Set(ids).size).toBe(20)
    expect(await stack.events.Delivery.countDocuments({ appDid: app.did, environment: 'test', eventType: TEST_EVENT_TYPE })).toBe(20)
    const states = await Promise.all(ids.map((id) => jobState(queue, id)))
    expect(states).toEqual(Array(20).fill('waiting'))
    expect(await stack.events.Delivery.countDocuments({ appDid: app.did, environment: 'live' })).toBe(0)
  })

  it('the xrpc channel with a receiver counts as configured; without one it is 400 WebhookNotConfigured', async () => {
    const app = await stack.newApp()
    const key = await app.apiKey('test', ['webhook.test.write'])
    expectOk(await updateConfig(stack, app, { environment: 'test', eventChannel: 'xrpc', webhookUrl: 'https://93.184.216.34/hook' }))
    expectError(await testEvent(stack, { app: app.did }, bearer(key)), 400, 'WebhookNotConfigured', /receiverUrl/)
    expectOk(await updateConfig(stack, app, { environment: 'test', receiverUrl: 'https://93.184.216.34' }))
    expect(expectOk(await testEvent(stack, { app: app.did }, bearer(key))).ok).toBe(true)
  })

  it('a paused webhook still gets its test delivery (the workers hold it)', async () => {
    const { app, key } = await configuredApp({ webhookUrl: 'https://93.184.216.34/hook', webhookPaused: true })
    const { deliveryId } = expectOk(await testEvent(stack, { app: app.did }, bearer(key)))
    expect(await jobState(queue, deliveryId)).toBe('waiting')
  })

  it('a request body, whatever it holds, is ignored', async () => {
    const { app, key } = await configuredApp()
    for (const [body, type] of [
      ['{"deliveryId": "whd_x", "environment": "live"}', 'application/json'],
      ['{not json', 'application/json'],
      ['hello', 'text/plain'],
    ] as const) {
      const res = await httpRequest(checkoutUrl(stack, TEST_EVENT_PATH, { app: app.did }), { method: 'POST', body, headers: { ...bearer(key), 'content-type': type } })
      expect(expectOk(res)).toMatchObject({ ok: true, environment: 'test' })
    }
  })
})

describe('refusals create nothing', () => {
  it('no channel configured is 400 WebhookNotConfigured', async () => {
    const app = await stack.newApp()
    const key = await app.apiKey('test', ['webhook.test.write'])
    expectError(await testEvent(stack, { app: app.did, environment: 'test' }, bearer(key)), 400, 'WebhookNotConfigured')
    expect(await stack.events.Delivery.countDocuments({ appDid: app.did })).toBe(0)
  })

  it('a live key is 403 and nothing is queued', async () => {
    const { app } = await configuredApp()
    expectOk(await updateConfig(stack, app, { environment: 'live', webhookUrl: 'https://93.184.216.34/live' }))
    const live = await app.apiKey('live', ['webhook.test.write'])
    expectError(await testEvent(stack, { app: app.did }, bearer(live)), 403, 'LiveDeveloperActionUnsupported')
    expect(await stack.events.Delivery.countDocuments({ appDid: app.did })).toBe(0)
  })

  it('GET is not a route (404 NotFound)', async () => {
    const { app, key } = await configuredApp()
    const res = await httpRequest(checkoutUrl(stack, TEST_EVENT_PATH, { app: app.did }), { headers: bearer(key) })
    expectError(res, 404, 'NotFound')
  })
})
