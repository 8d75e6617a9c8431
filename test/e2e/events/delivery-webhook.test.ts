/**
 * The HTTP webhook channel end to end (real FerretDB, Redis, BullMQ, gateway and HTTP): a domain event written to
 * the payments outbox is relayed to `domain-events` and becomes one delivery, sent with exactly the Standard Webhooks headers and the stored body; the
 * signature verifies with the independent `standardwebhooks` package and with the SDK's receiver helper; during a
 * rotation both secrets sign, after the overlap only the new one.
 */
import { Webhook } from 'standardwebhooks'
import { domainEventJob, type OutboxEvent } from '@svc/outbox'
import { createMemoryClaimStore, createWebhookRequestHandler, type EventEnvelope } from '@svc/sdk'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { ensureSigningSecret, rotateSigningSecret } from '@svc/events'
import { startReceiver, type ReceivedRequest, type Receiver } from './helpers/receiver'
import {
  attemptsOf,
  configureChannel,
  getDelivery,
  publishDomainEvent,
  queueTestDelivery,
  stackQueues,
  waitFor,
  waitForStatus,
  writeEvent,
  type StackQueues,
} from './helpers/events'

let stack: TestStack
let queues: StackQueues
let receiver: Receiver
let app: TestApp
let firstSecret: string

/** What a receiver built with the SDK answers, for the given secrets. */
function sdkHandler(secrets: string[], handled: EventEnvelope[] = []) {
  return createWebhookRequestHandler({
    secrets,
    store: createMemoryClaimStore(),
    handlers: { 'payment.completed': async (e) => void handled.push(e) },
  })
}

const headersOf = (req: ReceivedRequest) => req.headers as Record<string, string>

beforeAll(async () => {
  stack = await startStack('delivery-webhook', { allowLoopbackWebhooks: true })
  queues = stackQueues(stack)
  receiver = await startReceiver()
  app = await stack.newApp()
  firstSecret = (await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app.did, 'test')).secret!
  await configureChannel(stack, app.did, { url: `${receiver.url}/hooks/svc?source=tests` })
})
afterAll(async () => {
  await queues?.close()
  await stack?.stop()
  await receiver?.close()
})

describe('HTTP webhook delivery', () => {
  it('delivers a domain event with exactly the Standard Webhooks headers and the stored body', async () => {
    const handled: EventEnvelope[] = []
    const handle = sdkHandler([firstSecret], handled)
    receiver.answer = async (req) => {
      const res = await handle({ rawBody: req.body, headers: req.headers })
      return { status: res.status, body: res.body as object }
    }
    const occurredAt = '2026-06-01T10:20:30.456Z' // when the fact happened: the envelope's createdAt
    const data = { paymentUri: 'at://did:web:svc.test/money.svc.payment.record/3l2abc', cid: 'bafyrei…', amount: 1500, currency: 'usd', note: 'ünïcödé ✓' }
    const before = receiver.requests.length
    const { eventId, deliveryId } = await writeEvent(stack, { appDid: app.did, type: 'payment.completed', data, occurredAt: new Date(occurredAt) })

    const delivered = await waitForStatus(stack, deliveryId, 'delivered')
    expect(delivered).toMatchObject({ eventId, eventType: 'payment.completed', appDid: app.did, environment: 'test', attemptCount: 1, lastStatusCode: 200 })
    // the stack's apps and payments relays share one database (one outbox collection), so either may relay it
    expect(['payments', 'apps']).toContain(delivered.source)
    // the relay marks the events it published together, within its mark delay (often after the delivery)
    await waitFor(async () => (await stack.payments.Outbox.findById(eventId).lean())?.relayed === true, 'the outbox event to be marked relayed', 5000)
    expect(delivered.nextAttemptAt).toBeNull()
    expect(delivered.deliveredAt).toBeInstanceOf(Date)

    const requests = receiver.requests.slice(before)
    expect(requests).toHaveLength(1)
    const req = requests[0]!
    expect(req.method).toBe('POST')
    expect(req.path).toBe('/hooks/svc?source=tests')
    // exactly these headers (plus what HTTP itself needs: host, content-length, connection)
    const names = req.headerNames.map((n) => n.toLowerCase()).sort()
    expect(names).toEqual(
      ['connection', 'content-length', 'content-type', 'host', 'svc-api-version', 'svc-delivery-id', 'user-agent', 'webhook-id', 'webhook-signature', 'webhook-timestamp'].sort(),
    )
    const h = headersOf(req)
    expect(h['content-type']).toBe('application/json')
    expect(h['webhook-id']).toBe(deliveryId)
    expect(h['svc-delivery-id']).toBe(deliveryId)
    expect(h['svc-api-version']).toBe('2026-06')
    expect(h['user-agent']).toBe('svc-webhooks/2026-06')
    expect(Math.abs(Number(h['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30)
    expect(h['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/) // one secret, one signature

    // the body is the stored envelope, byte for byte
    expect(req.body).toBe(delivered.body)
    expect(Number(h['content-length'])).toBe(Buffer.byteLength(delivered.body))
    expect(JSON.parse(req.body)).toEqual({ id: deliveryId, type: 'payment.completed', createdAt: occurredAt, apiVersion: '2026-06', environment: 'test', data })
    expect(Object.keys(JSON.parse(req.body))).toEqual(['id', 'type', 'createdAt', 'apiVersion', 'environment', 'data'])

    // the independent Standard Webhooks implementation accepts it
    expect(new Webhook(firstSecret).verify(req.body, h)).toEqual(JSON.parse(req.body))
    // the SDK's receiver helper accepted it (that answer made it delivered) and ran the handler once
    expect(handled.map((e) => e.id)).toEqual([deliveryId])

    const attempts = await attemptsOf(stack, deliveryId)
    expect(attempts).toHaveLength(1)
    expect(attempts[0]).toMatchObject({ number: 1, run: 1, channel: 'webhook', outcome: 'delivered', statusCode: 200, error: null, responseExcerpt: '{"ok":true}' })
    expect(attempts[0]!.url).toBe(`${receiver.url}/hooks/svc?source=tests`)
    expect(attempts[0]!.durationMs).toEqual(expect.any(Number))
  })

  it('makes one delivery of an event relayed twice', async () => {
    const { eventId, deliveryId } = await writeEvent(stack, { appDid: app.did })
    await waitForStatus(stack, deliveryId, 'delivered')
    const before = receiver.requests.length
    // the event reaches the consumer again (a relay repeat after its first job was removed from the queue)
    const outboxEvent = (await stack.payments.Outbox.findById(eventId).lean<OutboxEvent>())!
    await publishDomainEvent(queues, domainEventJob('payments', outboxEvent), `${eventId}-again`)
    await waitFor(async () => (await queues.domainEvents.getJobState(`${eventId}-again`)) === 'completed', 'the repeated event to be consumed')
    expect(await stack.events.Delivery.countDocuments({ eventId })).toBe(1)
    expect((await getDelivery(stack, deliveryId))!.attemptCount).toBe(1)
    expect(receiver.requests.length).toBe(before)
  })

  it('records an answer whose body holds NUL characters (PostgreSQL under FerretDB stores none): delivered once', async () => {
    const answers = [{ status: 500, body: 'down\u0000' }, { status: 200, body: 'ok\u0000\u0000' }]
    receiver.answer = () => answers.shift() ?? { status: 200, body: { ok: true } }
    try {
      const { deliveryId } = await writeEvent(stack, { appDid: app.did })
      const d = await waitForStatus(stack, deliveryId, 'delivered')
      expect(d.attempts!.map((a) => [a.number, a.outcome, a.statusCode, a.responseExcerpt])).toEqual([
        [1, 'failed', 500, 'down\uFFFD'],
        [2, 'delivered', 200, 'ok\uFFFD\uFFFD'],
      ])
      expect(receiver.requests.filter((r) => r.headers['webhook-id'] === deliveryId)).toHaveLength(2)
    } finally {
      receiver.answer = () => ({ status: 200, body: { ok: true } })
    }
  })

  it('delivers a test-style delivery, which the SDK acknowledges without a handler', async () => {
    const handled: EventEnvelope[] = []
    const handle = sdkHandler([firstSecret], handled)
    receiver.answer = async (req) => {
      const res = await handle({ rawBody: req.body, headers: req.headers })
      return { status: res.status, body: res.body as object }
    }
    const id = await queueTestDelivery(stack, queues, app.did)
    const d = await waitForStatus(stack, id, 'delivered')
    expect(d.source).toBe('test')
    const req = receiver.requests.find((r) => r.headers['webhook-id'] === id)!
    expect(JSON.parse(req.body)).toMatchObject({ id, type: 'app.webhook.test', data: { test: true } })
    expect(handled).toEqual([])
  })

  it('signs with both secrets during a rotation, and with the new one only after the overlap', async () => {
    // Rotation with an hour of overlap: every delivery carries two signatures.
    const second = (await rotateSigningSecret(stack.events, stack.secrets.webhookSecretKey, app.did, 'test', 3600)).secret!
    const handle = sdkHandler([second])
    receiver.answer = async (req) => {
      const res = await handle({ rawBody: req.body, headers: req.headers })
      return { status: res.status, body: res.body as object }
    }
    const during = await writeEvent(stack, { appDid: app.did })
    await waitForStatus(stack, during.deliveryId, 'delivered')
    const duringReq = receiver.requests.find((r) => r.headers['webhook-id'] === during.deliveryId)!
    const duringHeaders = headersOf(duringReq)
    expect(duringHeaders['webhook-signature']!.split(' ')).toHaveLength(2)
    for (const secret of [firstSecret, second]) {
      expect(new Webhook(secret).verify(duringReq.body, duringHeaders)).toMatchObject({ id: during.deliveryId })
      expect(await sdkHandler([secret])({ rawBody: duringReq.body, headers: duringHeaders })).toEqual({ status: 200, body: { ok: true } })
    }

    // Rotation without overlap (a lost secret): only the newest signs from now on.
    const third = (await rotateSigningSecret(stack.events, stack.secrets.webhookSecretKey, app.did, 'test', 0)).secret!
    const handleThird = sdkHandler([third])
    receiver.answer = async (req) => {
      const res = await handleThird({ rawBody: req.body, headers: req.headers })
      return { status: res.status, body: res.body as object }
    }
    const after = await writeEvent(stack, { appDid: app.did })
    await waitForStatus(stack, after.deliveryId, 'delivered')
    const afterReq = receiver.requests.find((r) => r.headers['webhook-id'] === after.deliveryId)!
    const afterHeaders = headersOf(afterReq)
    expect(afterHeaders['webhook-signature']!.split(' ')).toHaveLength(1)
    expect(new Webhook(third).verify(afterReq.body, afterHeaders)).toMatchObject({ id: after.deliveryId })
    for (const retired of [firstSecret, second]) {
      expect(() => new Webhook(retired).verify(afterReq.body, afterHeaders)).toThrow()
      expect(await sdkHandler([retired])({ rawBody: afterReq.body, headers: afterHeaders })).toMatchObject({ status: 400, body: { error: 'InvalidSignature' } })
    }
  })
})
