/**
 * Domain events reach the app, end to end through the real stack and the real workers: the app configures its webhook
 * with money.svc.app.updateConfig (and keeps the signing secret it answers), a creator accepts and later revokes the
 * app's terms in the dashboard, a buyer pays the hosted checkout with a test card. The app's receiver, built with the
 * SDK's createWebhookRequestHandler on loopback, gets app.authorization.granted, payment.completed and
 * app.authorization.revoked, each verified, each once, with the envelope and `data` that docs/events.md documents and
 * that agree with what the app reads over XRPC; the delivery log lists them as delivered on the first attempt.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createMemoryClaimStore, createWebhookRequestHandler, type EventEnvelope } from '@svc/sdk'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectOk, httpRequest, updateConfig } from './helpers'
import { approvedCreator, decide, initiate, payByForm, paymentStatus, product } from './payment-helpers'
import { ATM_PATH, checkoutUrl } from './events-helpers'

let stack: TestStack
let app: TestApp
let server: Server
const handled: EventEnvelope[] = []
const arrivals: { headers: IncomingHttpHeaders; status: number }[] = []
let receive: ReturnType<typeof createWebhookRequestHandler> | undefined

beforeAll(async () => {
  stack = await startStack('event-journey', { allowLoopbackWebhooks: true })
  server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      void (async () => {
        const answer = receive ? await receive({ rawBody: Buffer.concat(chunks), headers: req.headers }) : { status: 503, body: { error: 'NotReady' } }
        arrivals.push({ headers: req.headers, status: answer.status })
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body))
      })()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  app = await stack.newApp()
  const configured = expectOk(await updateConfig(stack, app, { environment: 'test', webhookUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/svc/events` }))
  const secret: string = configured.webhook.signingSecret
  expect(secret).toMatch(/^whsec_/)
  const record = async (envelope: EventEnvelope) => void handled.push(envelope)
  receive = createWebhookRequestHandler({
    secret,
    store: createMemoryClaimStore(),
    handlers: { 'payment.completed': record, 'app.authorization.granted': record, 'app.authorization.revoked': record },
  })
})
afterAll(async () => {
  server?.closeAllConnections()
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()))
  await stack?.stop()
})

async function eventOf(type: string, match: (data: Record<string, unknown>) => boolean): Promise<EventEnvelope<Record<string, unknown>>> {
  const deadline = Date.now() + 20_000
  for (;;) {
    const found = handled.find((e) => e.type === type && match(e.data as Record<string, unknown>))
    if (found) return found as EventEnvelope<Record<string, unknown>>
    if (Date.now() > deadline) throw new Error(`no ${type} reached the receiver; got ${handled.map((e) => e.type).join(', ') || 'nothing'}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

function expectEnvelope(e: EventEnvelope, type: string) {
  expect(Object.keys(e)).toEqual(['id', 'type', 'createdAt', 'apiVersion', 'environment', 'data'])
  expect(e).toMatchObject({ id: expect.stringMatching(/^whd_[0-9a-f]{32}$/), type, apiVersion: '2026-06', environment: 'test' })
  expect(new Date(e.createdAt).toISOString()).toBe(e.createdAt)
  const sent = arrivals.filter((a) => a.headers['webhook-id'] === e.id)
  expect(sent.length).toBeGreaterThanOrEqual(1)
  for (const a of sent) {
    expect(a.headers['svc-delivery-id']).toBe(e.id)
    expect(a.headers['svc-api-version']).toBe('2026-06')
    expect(a.headers['webhook-signature']).toMatch(/^v1,/)
  }
}

it('a creator accepting the terms, a paid checkout and a revocation each reach the app once, verified, with their documented data', async () => {
  // 1. the creator accepts the app's terms in the dashboard → app.authorization.granted
  const creator = await approvedCreator(stack, app, { paymentTypes: ['tip'] })
  const granted = await eventOf('app.authorization.granted', (d) => d.approvalId === creator.approvalId)
  expectEnvelope(granted, 'app.authorization.granted')
  expect(granted.data).toEqual({
    approvalId: creator.approvalId,
    recipientDid: creator.did,
    paymentTypes: ['tip'],
    feeShareBps: 500,
    publicRecords: expect.any(Object),
    approvedAt: expect.any(String),
  })

  // 2. a buyer pays the hosted checkout → payment.completed, agreeing with network.svc.payment.status
  const { token, url } = expectOk(await initiate(stack, app, product(creator.did, { amount: 1234, appOrderId: 'journey-order-1' })))
  expect((await payByForm(url, '4242 4242 4242 4242')).status).toBe(303)
  const status = expectOk(await paymentStatus(stack, app, token))
  expect(status.status).toBe('completed')
  const completed = await eventOf('payment.completed', (d) => d.appOrderId === 'journey-order-1')
  expectEnvelope(completed, 'payment.completed')
  expect(completed.data).toMatchObject({
    paymentUri: status.ref.uri,
    cid: status.ref.cid,
    appOrderId: 'journey-order-1',
    recipientDid: creator.did,
    paymentType: 'tip',
    amount: 1234,
    currency: 'usd',
    buyerFee: expect.any(Number),
    total: expect.any(Number),
    serviceFee: expect.any(Number),
    appFee: expect.any(Number),
    completedAt: expect.any(String),
  })
  // the fees the event names are the payment record's
  const record = JSON.parse((await stack.payments.PaymentRecord.findOne({ uri: status.ref.uri }).lean())!.recordJson) as { serviceFee: number; appFee: number }
  expect({ serviceFee: completed.data.serviceFee, appFee: completed.data.appFee }).toEqual({ serviceFee: record.serviceFee, appFee: record.appFee })

  // 3. the creator revokes → app.authorization.revoked
  expect((await decide(stack, creator.cookie, creator.approvalId, 'revoke')).status).toBe(303)
  const revoked = await eventOf('app.authorization.revoked', (d) => d.approvalId === creator.approvalId)
  expectEnvelope(revoked, 'app.authorization.revoked')
  expect(revoked.data).toMatchObject({ approvalId: creator.approvalId, recipientDid: creator.did, status: 'revoked', revokedAt: expect.any(String) })

  // each event was handled once, on its first attempt, and the log lists them as delivered
  const ids = [granted.id, completed.id, revoked.id]
  expect(new Set(ids).size).toBe(3)
  expect(handled.filter((e) => ids.includes(e.id))).toHaveLength(3)
  const key = await app.apiKey('test', ['webhook.deliveries.read'])
  const deadline = Date.now() + 10_000
  let log: { id: string; eventType: string; status: string; attemptCount: number }[] = []
  do {
    const res = await httpRequest(checkoutUrl(stack, ATM_PATH, { app: app.did, environment: 'test' }), { headers: { authorization: `Bearer ${key}` } })
    log = expectOk(res).deliveries
    if (ids.every((id) => log.find((d) => d.id === id)?.status === 'delivered')) break
    await new Promise((r) => setTimeout(r, 100))
  } while (Date.now() < deadline)
  // newest first: revoked, completed, granted
  expect(log.map((d) => [d.id, d.eventType, d.status, d.attemptCount])).toEqual([
    [revoked.id, 'app.authorization.revoked', 'delivered', 1],
    [completed.id, 'payment.completed', 'delivered', 1],
    [granted.id, 'app.authorization.granted', 'delivered', 1],
  ])
})
