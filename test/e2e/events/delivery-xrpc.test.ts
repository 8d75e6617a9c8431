/**
 * The XRPC channel: the app hosts money.svc.event.receiveEvent with the SDK's createReceiveEventHandler and a real
 * @svc/service-auth verifier (audience = the app's DID, expected issuer = the service's DID, a did:key here so the
 * app verifies offline). A delivery signed with SERVICE_SIGNING_KEY is accepted once; a JWT that names the service
 * but is signed by another key gets 401 InvalidSignature and the delivery retries.
 */
import { randomBytes } from 'node:crypto'
import pino from 'pino'
import { createMemoryClaimStore, createReceiveEventHandler, type EventEnvelope } from '@svc/sdk'
import { createServiceAuthVerifier } from '@svc/service-auth'
import { startStack, type TestStack } from '../../stack'
import { ensureSigningSecret, startEventWorkers } from '@svc/events'
import { startReceiver, type Receiver } from './helpers/receiver'
import { attemptsOf, configureChannel, waitFor, waitForStatus, writeEvent } from './helpers/events'

const NSID = 'money.svc.event.receiveEvent'

let stack: TestStack
let receiver: Receiver

beforeAll(async () => {
  stack = await startStack('delivery-xrpc', { allowLoopbackWebhooks: true, serviceDidFromSigningKey: true, workers: false })
})
afterAll(async () => {
  await stack?.stop()
  await receiver?.close()
})

function jwtPayload(authorization: string | undefined): Record<string, unknown> {
  const jwt = /^Bearer (.+)$/.exec(authorization ?? '')?.[1] ?? ''
  return JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>
}

it('delivers through receiveEvent with service-auth; a forged JWT is refused and the delivery retries', async () => {
  expect(stack.serviceDid).toMatch(/^did:key:/)
  const app = await stack.newApp()
  const verifier = createServiceAuthVerifier({ serviceDid: app.did, plcUrl: 'http://127.0.0.1:9', redis: stack.redis, replayKeyPrefix: `${stack.redisPrefix}app-jti:` })
  const processed: EventEnvelope[] = []
  const receiveEvent = createReceiveEventHandler({
    serviceDid: stack.serviceDid,
    verifier,
    store: createMemoryClaimStore(),
    handlers: { 'payment.completed': async (e) => void processed.push(e) },
  })
  receiver = await startReceiver(async (req) => {
    if (req.method !== 'POST' || req.path !== `/xrpc/${NSID}`) return { status: 404, body: { error: 'MethodNotImplemented' } }
    const res = await receiveEvent({ headers: req.headers, body: req.body })
    return { status: res.status, body: res.body as object }
  })
  await configureChannel(stack, app.did, { channel: 'xrpc', receiverUrl: receiver.url })

  // A worker that claims to be the service but signs with another key (its retry waits about 1 s: scale 1/5).
  const forger = await startEventWorkers({
    mongoUrl: stack.mongoUrl,
    redisUrl: stack.redisUrl,
    redisPrefix: stack.redisPrefix,
    logger: pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' }),
    gateway: { url: stack.gatewayUrl, key: stack.secrets.callerKeys.events },
    serviceDid: stack.serviceDid,
    serviceSigningKey: randomBytes(32).toString('hex'),
    secretKey: stack.secrets.webhookSecretKey,
    delivery: { ...stack.delivery, scheduleScale: 1 / 5 },
    allowLoopbackWebhooks: true,
  })
  const data = { paymentUri: 'at://did:web:svc.test/money.svc.payment.record/3l2xyz', amount: 2500, currency: 'eur' }
  const { deliveryId } = await writeEvent(stack, { appDid: app.did, type: 'payment.completed', data })
  const [forged] = await waitFor(async () => {
    const attempts = await attemptsOf(stack, deliveryId)
    return attempts[0]?.outcome === 'failed' ? attempts : null
  }, 'the forged attempt to be refused')
  await forger.stop()
  expect(forged).toMatchObject({ number: 1, channel: 'xrpc', outcome: 'failed', statusCode: 401, error: 'HTTP 401', url: `${receiver.url}/xrpc/${NSID}` })
  expect(JSON.parse(forged!.responseExcerpt!)).toEqual({ error: 'InvalidSignature', message: 'service-auth refused (BadJwtSignature)' })
  expect(forged!.nextAttemptAt).toBeInstanceOf(Date)
  expect(processed).toHaveLength(0)
  expect(jwtPayload(receiver.requests[0]!.headers.authorization).iss).toBe(stack.serviceDid) // it named the service…

  // The real workers (SERVICE_SIGNING_KEY) send the retry.
  await stack.startWorkers()
  const delivered = await waitForStatus(stack, deliveryId, 'delivered')
  expect(delivered.attemptCount).toBe(2)
  const attempts = await attemptsOf(stack, deliveryId)
  expect(attempts.map((a) => [a.number, a.outcome, a.statusCode])).toEqual([
    [1, 'failed', 401],
    [2, 'delivered', 200],
  ])
  expect(attempts[1]!.responseExcerpt).toBe('{"ok":true}')
  expect(processed.map((e) => e.id)).toEqual([deliveryId])
  expect(processed[0]!.data).toEqual(data)

  expect(receiver.requests).toHaveLength(2)
  const req = receiver.requests[1]!
  expect(req.path).toBe(`/xrpc/${NSID}`)
  expect(req.body).toBe(delivered.body)
  expect(req.headers['content-type']).toBe('application/json')
  expect(req.headers['svc-delivery-id']).toBe(deliveryId)
  expect(req.headers['svc-api-version']).toBe('2026-06')
  expect(req.headers['webhook-signature']).toBeUndefined()
  const claims = jwtPayload(req.headers.authorization)
  expect(claims).toMatchObject({ iss: stack.serviceDid, aud: app.did, lxm: NSID })
  expect(claims.exp as number).toBe((claims.iat as number) + 60)
  expect(claims.jti).toEqual(expect.any(String))
  expect(jwtPayload(receiver.requests[0]!.headers.authorization).jti).not.toBe(claims.jti)
})

it("a receiver's DuplicateDelivery error (the contract's answer for an id it has processed) ends the delivery delivered, on either channel; another 4xx fails", async () => {
  await stack.startWorkers()
  const app = await stack.newApp()
  const duplicate = await startReceiver(() => ({ status: 409, body: { error: 'DuplicateDelivery', message: 'already processed' } }))
  const conflict = await startReceiver(() => ({ status: 409, body: { error: 'Conflict', message: 'busy' } }))
  try {
    await configureChannel(stack, app.did, { channel: 'xrpc', receiverUrl: duplicate.url })
    const { deliveryId } = await writeEvent(stack, { appDid: app.did, type: 'payment.completed', data: { amount: 100 } })
    const delivered = await waitForStatus(stack, deliveryId, 'delivered')
    expect(delivered.attemptCount).toBe(1)
    expect((await attemptsOf(stack, deliveryId)).map((a) => [a.outcome, a.statusCode, a.error])).toEqual([['delivered', 409, null]])

    // the same answer from a webhook endpoint (receiver rule 4 names it for every receiver)
    const other = await stack.newApp()
    await configureChannel(stack, other.did, { channel: 'webhook', url: duplicate.url })
    await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, other.did, 'test')
    const webhook = await writeEvent(stack, { appDid: other.did, type: 'payment.completed', data: { amount: 100 } })
    expect((await waitForStatus(stack, webhook.deliveryId, 'delivered')).attemptCount).toBe(1)

    // another 4xx is a failure
    const third = await stack.newApp()
    await configureChannel(stack, third.did, { channel: 'webhook', url: conflict.url })
    await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, third.did, 'test')
    const refused = await writeEvent(stack, { appDid: third.did, type: 'payment.completed', data: { amount: 100 } })
    const [failed] = await waitFor(async () => {
      const attempts = await attemptsOf(stack, refused.deliveryId)
      return attempts[0] ? attempts : null
    }, 'the webhook attempt')
    expect(failed).toMatchObject({ outcome: 'failed', statusCode: 409, error: 'HTTP 409' })
  } finally {
    await duplicate.close()
    await conflict.close()
  }
})

it('an XRPC delivery also carries the Standard Webhooks signature of its environment: a receiver given the secret checks the body with it', async () => {
  await stack.startWorkers()
  const app = await stack.newApp()
  const secret = (await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app.did, 'test')).secret!
  const processed: EventEnvelope[] = []
  const receiveEvent = createReceiveEventHandler({
    serviceDid: stack.serviceDid,
    verifier: createServiceAuthVerifier({ serviceDid: app.did, plcUrl: 'http://127.0.0.1:9', redis: stack.redis, replayKeyPrefix: `${stack.redisPrefix}signed-jti:` }),
    secret,
    environment: 'test',
    store: createMemoryClaimStore(),
    handlers: { 'payment.completed': async (e) => void processed.push(e) },
  })
  const signed = await startReceiver(async (req) => {
    // the raw body, as received: the signature covers its bytes
    const res = await receiveEvent({ headers: req.headers, body: req.body })
    return { status: res.status, body: res.body as object }
  })
  try {
    await configureChannel(stack, app.did, { channel: 'xrpc', receiverUrl: signed.url })
    const { deliveryId } = await writeEvent(stack, { appDid: app.did, type: 'payment.completed', data: { amount: 700 } })
    const delivered = await waitForStatus(stack, deliveryId, 'delivered')
    expect(delivered.attemptCount).toBe(1)
    expect(processed.map((e) => e.id)).toEqual([deliveryId])
    const req = signed.requests[0]!
    expect(req.headers['webhook-id']).toBe(deliveryId)
    expect(req.headers.authorization).toMatch(/^Bearer /)
    // any Standard Webhooks library verifies it, as on the webhook channel
    const { Webhook } = await import('standardwebhooks')
    expect(new Webhook(secret.slice('whsec_'.length)).verify(req.body, req.headers as Record<string, string>)).toEqual(JSON.parse(delivered.body))
  } finally {
    await signed.close()
  }
})
