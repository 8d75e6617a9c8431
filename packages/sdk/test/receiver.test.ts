/**
 * Receiving events: Standard Webhooks verification against signatures made independently (node:crypto HMAC and the
 * `standardwebhooks` package), the claim flow with the memory store, both request handlers, and receiveEvent with a
 * real @svc/service-auth verifier (replay keys in Redis db 15 under a unique prefix).
 */
import { createHmac, randomBytes } from 'node:crypto'
import Redis from 'ioredis'
import { Webhook } from 'standardwebhooks'
import { createServiceAuthVerifier, generateDidKeyKeypair, mintServiceJwt } from '@svc/service-auth'
import { isolate } from '@svc/testing'
import {
  API_VERSION,
  ReceiverError,
  createMemoryClaimStore,
  createReceiveEventHandler,
  createWebhookRequestHandler,
  handleDelivery,
  verifyWebhook,
  type EventEnvelope,
} from '../src'

const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`
const SECRET = newSecret()
const OLD_SECRET = newSecret()

/** Independent signer: HMAC-SHA256 with node:crypto over "id.timestamp.body". */
function hmacSign(secret: string, id: string, ts: number, body: string): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64')}`
}

let seq = 0
function envelope(over: Partial<EventEnvelope> = {}): EventEnvelope {
  return {
    id: `whd_${Date.now().toString(36)}_${seq++}_${randomBytes(4).toString('hex')}`,
    type: 'payment.completed',
    createdAt: new Date().toISOString(),
    apiVersion: API_VERSION,
    environment: 'test',
    data: { paymentUri: 'at://did:plc:x/network.svc.payment/1' },
    ...over,
  }
}

function signed(env: EventEnvelope, opts: { secret?: string; ts?: number; signature?: string; headers?: Record<string, string> } = {}) {
  const rawBody = JSON.stringify(env)
  const ts = opts.ts ?? Math.floor(Date.now() / 1000)
  const headers: Record<string, string> = {
    'webhook-id': env.id,
    'webhook-timestamp': String(ts),
    'webhook-signature': opts.signature ?? hmacSign(opts.secret ?? SECRET, env.id, ts, rawBody),
    'Svc-Delivery-Id': env.id,
    'svc-api-version': API_VERSION,
    'content-type': 'application/json',
    ...opts.headers,
  }
  return { rawBody, headers }
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (err) {
    return err instanceof ReceiverError ? err.code : `not a ReceiverError: ${String(err)}`
  }
  return undefined
}

describe('verifyWebhook', () => {
  it('accepts a node:crypto signature and returns the envelope; string, Buffer and Fetch Headers alike', () => {
    const env = envelope()
    const { rawBody, headers } = signed(env)
    expect(verifyWebhook({ secret: SECRET, rawBody, headers })).toEqual(env)
    expect(verifyWebhook({ secret: SECRET, rawBody: Buffer.from(rawBody), headers: new Headers(headers) })).toEqual(env)
  })

  it('accepts a signature made by the standardwebhooks package, and the package accepts ours', () => {
    const env = envelope()
    const rawBody = JSON.stringify(env)
    const ts = Math.floor(Date.now() / 1000)
    const pkg = new Webhook(SECRET).sign(env.id, new Date(ts * 1000), rawBody)
    expect(pkg).toBe(hmacSign(SECRET, env.id, ts, rawBody))
    const { headers } = signed(env, { ts, signature: pkg })
    expect(verifyWebhook({ secret: SECRET, rawBody, headers })).toEqual(env)
    expect(new Webhook(SECRET).verify(rawBody, signed(env, { ts }).headers)).toEqual(env)
  })

  it('rotation: several signatures in the header, several secrets on the receiver', () => {
    const env = envelope()
    const ts = Math.floor(Date.now() / 1000)
    const body = JSON.stringify(env)
    const both = `${hmacSign(OLD_SECRET, env.id, ts, body)} ${hmacSign(SECRET, env.id, ts, body)}`
    expect(verifyWebhook({ secret: SECRET, ...signed(env, { ts, signature: both }) }).id).toBe(env.id)
    expect(verifyWebhook({ secret: OLD_SECRET, ...signed(env, { ts, signature: both }) }).id).toBe(env.id)
    // the header sent twice (a proxy split it): node:http and fetch join the two with ", "
    const joined = `${hmacSign(OLD_SECRET, env.id, ts, body)}, ${hmacSign(SECRET, env.id, ts, body)}`
    expect(verifyWebhook({ secret: OLD_SECRET, ...signed(env, { ts, signature: joined }) }).id).toBe(env.id)
    expect(verifyWebhook({ secret: SECRET, ...signed(env, { ts, signature: joined }) }).id).toBe(env.id)
    // receiver holding old and new secrets, sender signing with the new one only
    expect(verifyWebhook({ secrets: [OLD_SECRET, SECRET], ...signed(env, { ts }) }).id).toBe(env.id)
    // an unknown version tag or a wrong secret alone is refused
    expect(codeOf(() => verifyWebhook({ secret: SECRET, ...signed(env, { ts, signature: hmacSign(OLD_SECRET, env.id, ts, body) }) }))).toBe('InvalidSignature')
    const v2 = hmacSign(SECRET, env.id, ts, body).replace('v1,', 'v2,')
    expect(codeOf(() => verifyWebhook({ secret: SECRET, ...signed(env, { ts, signature: v2 }) }))).toBe('InvalidSignature')
  })

  it('refuses a tampered body, missing headers, old or future timestamps', () => {
    const env = envelope()
    const { rawBody, headers } = signed(env)
    const tampered = rawBody.replace('"test"', '"live"')
    expect(tampered).not.toBe(rawBody)
    expect(codeOf(() => verifyWebhook({ secret: SECRET, rawBody: tampered, headers }))).toBe('InvalidSignature')
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature', 'Svc-Delivery-Id']) {
      const h = { ...headers }
      delete h[name]
      expect([name, codeOf(() => verifyWebhook({ secret: SECRET, rawBody, headers: h }))]).toEqual([name, 'InvalidSignature'])
    }
    const now = Date.now()
    const old = Math.floor(now / 1000) - 301
    expect(codeOf(() => verifyWebhook({ secret: SECRET, ...signed(env, { ts: old }), now }))).toBe('InvalidSignature')
    expect(codeOf(() => verifyWebhook({ secret: SECRET, ...signed(env, { ts: Math.floor(now / 1000) + 301 }), now }))).toBe('InvalidSignature')
    expect(verifyWebhook({ secret: SECRET, ...signed(env, { ts: old }), now, toleranceSeconds: 600 }).id).toBe(env.id)
    expect(verifyWebhook({ secret: SECRET, ...signed(env, { ts: old }), now: now - 60_000 }).id).toBe(env.id)
    // a tolerance that is not a whole number of seconds (an unset variable read as NaN) would accept any age: refused
    for (const toleranceSeconds of [NaN, Infinity, -1, 1.5]) {
      expect(() => verifyWebhook({ secret: SECRET, ...signed(env, { ts: old }), now, toleranceSeconds })).toThrow(TypeError)
      expect(() => createWebhookRequestHandler({ secret: SECRET, store: createMemoryClaimStore(), handlers: {}, toleranceSeconds })).toThrow(TypeError)
    }
    // so would a clock that is not a time (NaN from an unset variable, an invalid Date): refused, not any age accepted
    for (const broken of [NaN, Infinity, new Date('not a date')]) {
      expect(() => verifyWebhook({ secret: SECRET, ...signed(env, { ts: 1_000_000 }), now: broken })).toThrow(TypeError)
    }
  })

  it('refuses webhook-id ≠ envelope id and Svc-Delivery-Id ≠ webhook-id (both correctly signed)', () => {
    const env = envelope()
    const other = envelope().id
    const body = JSON.stringify(env)
    const ts = Math.floor(Date.now() / 1000)
    const idMismatch = signed(env, { signature: hmacSign(SECRET, other, ts, body), ts, headers: { 'webhook-id': other, 'Svc-Delivery-Id': other } })
    expect(codeOf(() => verifyWebhook({ secret: SECRET, ...idMismatch }))).toBe('InvalidSignature')
    expect(codeOf(() => verifyWebhook({ secret: SECRET, ...signed(env, { headers: { 'Svc-Delivery-Id': other } }) }))).toBe('InvalidSignature')
  })

  it('refuses another API version in the header or the envelope with ApiVersionMismatch', () => {
    const env = envelope()
    expect(codeOf(() => verifyWebhook({ secret: SECRET, ...signed(env, { headers: { 'svc-api-version': '2025-01' } }) }))).toBe('ApiVersionMismatch')
    const h = signed(env).headers
    delete h['svc-api-version']
    expect(codeOf(() => verifyWebhook({ secret: SECRET, rawBody: JSON.stringify(env), headers: h }))).toBe('ApiVersionMismatch')
    expect(codeOf(() => verifyWebhook({ secret: SECRET, ...signed(envelope({ apiVersion: '2027-01' })) }))).toBe('ApiVersionMismatch')
  })

  it('configuration errors are TypeErrors, not delivery errors', () => {
    const { rawBody, headers } = signed(envelope())
    expect(() => verifyWebhook({ rawBody, headers })).toThrow(TypeError)
    expect(() => verifyWebhook({ secret: 'svc_rk_not_a_secret', rawBody, headers })).toThrow(TypeError)
    expect(() => verifyWebhook({ secret: SECRET, rawBody: JSON.parse(rawBody), headers })).toThrow(TypeError)
  })
})

describe('handleDelivery (memory store)', () => {
  it('runs the handler once, then answers duplicate', async () => {
    const store = createMemoryClaimStore()
    const seen: string[] = []
    const handlers = { 'payment.completed': async (e: EventEnvelope) => void seen.push(e.id) }
    const env = envelope()
    expect(await handleDelivery({ store, envelope: env, handlers })).toEqual({ ok: true, duplicate: false, test: false })
    expect(await handleDelivery({ store, envelope: env, handlers })).toEqual({ ok: true, duplicate: true, test: false })
    expect(seen).toEqual([env.id])
  })

  it('a failed completion is still acknowledged, also when onCompleteError throws', async () => {
    const memory = createMemoryClaimStore()
    const store = { ...memory, complete: async () => Promise.reject(new Error('store down')) }
    const reported: unknown[] = []
    const onCompleteError = (err: unknown) => {
      reported.push(err)
      throw new Error('the logger threw')
    }
    const env = envelope()
    expect(await handleDelivery({ store, envelope: env, handlers: { 'payment.completed': async () => undefined }, onCompleteError })).toEqual({ ok: true, duplicate: false, test: false })
    expect(reported).toHaveLength(1)
  })

  it('a handler error releases the claim and is rethrown; the retry runs it again', async () => {
    const store = createMemoryClaimStore()
    let calls = 0
    const handlers = {
      'payment.completed': async () => {
        if (++calls === 1) throw new Error('db down')
      },
    }
    const env = envelope()
    await expect(handleDelivery({ store, envelope: env, handlers })).rejects.toThrow('db down')
    expect((await handleDelivery({ store, envelope: env, handlers })).duplicate).toBe(false)
    expect(calls).toBe(2)
  })

  it('a delivery claimed elsewhere is DeliveryInProgress (409, retryable)', async () => {
    const store = createMemoryClaimStore()
    const env = envelope()
    expect(await store.claim(env.id, 60_000)).toEqual({ state: 'claimed', token: expect.any(String) })
    const err = await handleDelivery({ store, envelope: env, handlers: { 'payment.completed': async () => undefined } }).catch((e) => e)
    expect(err).toBeInstanceOf(ReceiverError)
    expect([err.code, err.status, err.retryable]).toEqual(['DeliveryInProgress', 409, true])
    // also where this process has no handler for its type (a rolling deploy: the worker holding it has one)
    const unknown = envelope({ type: 'app.authorization.revoked' })
    await store.claim(unknown.id, 60_000)
    expect(await handleDelivery({ store, envelope: unknown, handlers: {} }).catch((e) => e.code)).toBe('DeliveryInProgress')
  })

  it('test events never reach handlers; onTestEvent sees them', async () => {
    const store = createMemoryClaimStore()
    const real = jest.fn(async () => undefined)
    const handlers = { 'app.webhook.test': real, 'payment.completed': real }
    const probe = envelope({ type: 'app.webhook.test', data: {} })
    expect(await handleDelivery({ store, envelope: probe, handlers })).toEqual({ ok: true, duplicate: false, test: true })
    const onTestEvent = jest.fn(async () => undefined)
    await handleDelivery({ store, envelope: probe, handlers, onTestEvent })
    await handleDelivery({ store, envelope: probe, handlers, onTestEvent })
    expect(onTestEvent).toHaveBeenCalledTimes(1)
    expect(real).not.toHaveBeenCalled()
  })

  it('types without an own handler are UnsupportedEvent (also inherited names like "constructor")', async () => {
    const store = createMemoryClaimStore()
    for (const type of ['app.authorization.granted', 'subscription.renewed', 'constructor', '__proto__', 'toString']) {
      const err = await handleDelivery({ store, envelope: envelope({ type }), handlers: { 'payment.completed': async () => undefined } }).catch((e) => e)
      expect([type, err?.code]).toEqual([type, 'UnsupportedEvent'])
    }
  })

  it('an id already processed is a duplicate (2xx) even once its type has no handler; an unsupported one leaves no claim behind', async () => {
    const store = createMemoryClaimStore()
    const processed = envelope({ type: 'app.authorization.granted' })
    await handleDelivery({ store, envelope: processed, handlers: { 'app.authorization.granted': async () => undefined } })
    // a deploy dropped the handler; the service redrives the delivery
    expect(await handleDelivery({ store, envelope: processed, handlers: {} })).toEqual({ ok: true, duplicate: true, test: false })
    const unsupported = envelope({ type: 'app.authorization.revoked' })
    expect(await handleDelivery({ store, envelope: unsupported, handlers: {} }).catch((e) => e.code)).toBe('UnsupportedEvent')
    // released at once: a handler added since processes the retry (no DeliveryInProgress for the claim's TTL)
    const later = jest.fn(async () => undefined)
    expect(await handleDelivery({ store, envelope: unsupported, handlers: { 'app.authorization.revoked': later } })).toEqual({ ok: true, duplicate: false, test: false })
    expect(later).toHaveBeenCalledTimes(1)
  })

  it('a receiver of one environment refuses the other\'s events before any handler or claim (InvalidEnvelope)', async () => {
    const store = createMemoryClaimStore()
    const seen: string[] = []
    const handlers = { 'payment.completed': async (e: EventEnvelope) => void seen.push(e.environment) }
    const test = envelope({ environment: 'test' })
    const err = await handleDelivery({ store, envelope: test, handlers, environment: 'live' }).catch((e) => e)
    expect(err).toMatchObject({ code: 'InvalidEnvelope', status: 400, message: 'this receiver takes live events only; this is a test event' })
    // nothing was claimed: a receiver of that environment still takes it
    expect(await handleDelivery({ store, envelope: test, handlers, environment: 'test' })).toEqual({ ok: true, duplicate: false, test: false })
    expect(await handleDelivery({ store, envelope: envelope({ environment: 'live' }), handlers, environment: 'live' })).toMatchObject({ ok: true })
    expect(seen).toEqual(['test', 'live'])
  })
})

describe('createWebhookRequestHandler', () => {
  it('maps outcomes to statuses', async () => {
    const store = createMemoryClaimStore()
    const fulfilled: string[] = []
    let fail = false
    const handle = createWebhookRequestHandler({
      secrets: [OLD_SECRET, SECRET],
      store,
      handlers: {
        'payment.completed': async (e) => {
          if (fail) throw new Error('secret internal detail')
          fulfilled.push(e.id)
        },
      },
    })
    const env = envelope()
    expect(await handle(signed(env))).toEqual({ status: 200, body: { ok: true } })
    expect(await handle(signed(env))).toEqual({ status: 200, body: { ok: true, duplicate: true } })
    expect(fulfilled).toEqual([env.id])

    const bad = signed(envelope())
    bad.headers['webhook-signature'] = 'v1,' + Buffer.alloc(32).toString('base64')
    expect(await handle(bad)).toMatchObject({ status: 400, body: { error: 'InvalidSignature' } })
    expect(await handle(signed(envelope({ type: 'app.authorization.revoked' })))).toMatchObject({ status: 400, body: { error: 'UnsupportedEvent' } })
    expect(await handle(signed(envelope({ apiVersion: '2025-01' })))).toMatchObject({ status: 400, body: { error: 'ApiVersionMismatch' } })
    expect(await handle(signed(envelope({ type: 'app.webhook.test', data: {} })))).toEqual({ status: 200, body: { ok: true } })

    fail = true
    const failing = await handle(signed(envelope()))
    expect(failing.status).toBe(500)
    expect(JSON.stringify(failing.body)).not.toContain('secret internal detail')

    const held = envelope()
    await store.claim(held.id, 60_000)
    expect(await handle(signed(held))).toMatchObject({ status: 409, body: { error: 'DeliveryInProgress' } })
  })
})

describe('onError: what a 500 answer does not echo', () => {
  it('gets a handler\'s error and a wiring mistake (a parsed body where the raw one is needed); ReceiverErrors and a throwing callback do not change the answer', async () => {
    const errors: unknown[] = []
    const handle = createWebhookRequestHandler({
      secret: SECRET,
      store: createMemoryClaimStore(),
      handlers: { 'payment.completed': async () => Promise.reject(new Error('secret internal detail')) },
      onError: (err) => void errors.push(err),
    })
    expect((await handle(signed(envelope()))).status).toBe(500)
    const parsed = signed(envelope())
    expect((await handle({ headers: parsed.headers, rawBody: JSON.parse(parsed.rawBody) as never })).status).toBe(500)
    expect((await handle({ ...signed(envelope()), rawBody: 'tampered' })).status).toBe(400)
    expect(errors.map((e) => (e as Error).message)).toEqual(['secret internal detail', expect.stringMatching(/raw/)])

    const throwing = createWebhookRequestHandler({
      secret: SECRET,
      store: createMemoryClaimStore(),
      handlers: { 'payment.completed': async () => Promise.reject(new Error('boom')) },
      onError: () => {
        throw new Error('logger down')
      },
    })
    expect(await throwing(signed(envelope()))).toEqual({ status: 500, body: { error: 'InternalServerError', message: 'the event could not be processed' } })
  })
})

describe('createReceiveEventHandler (money.svc.event.receiveEvent)', () => {
  const iso = isolate('sdk_receive_event')
  let redis: Redis
  beforeAll(() => {
    redis = new Redis(iso.redisUrl, { lazyConnect: false })
  })
  afterAll(async () => {
    const keys = await redis.keys(`${iso.redisPrefix}*`)
    if (keys.length) await redis.del(...keys)
    await redis.quit()
  })

  it('verifies the service-auth JWT with @svc/service-auth and runs the same flow', async () => {
    const service = await generateDidKeyKeypair('ES256K')
    const stranger = await generateDidKeyKeypair('ES256')
    const appDid = 'did:web:app.example'
    const verifier = createServiceAuthVerifier({ serviceDid: appDid, plcUrl: 'http://127.0.0.1:9', redis, replayKeyPrefix: `${iso.redisPrefix}jti:` })
    const seen: string[] = []
    const handle = createReceiveEventHandler({
      serviceDid: service.did,
      verifier,
      store: createMemoryClaimStore(),
      handlers: { 'payment.completed': async (e) => void seen.push(e.id) },
    })
    const jwt = (kp = service, over: { aud?: string; lxm?: string } = {}) =>
      mintServiceJwt({ keypair: kp.keypair, iss: kp.did, aud: over.aud ?? appDid, lxm: over.lxm ?? 'money.svc.event.receiveEvent' })
    const env = envelope()
    const headers = async (token: string) => ({ authorization: `Bearer ${token}`, 'svc-delivery-id': env.id, 'svc-api-version': API_VERSION })

    expect(await handle({ headers: await headers(await jwt()), body: env })).toEqual({ status: 200, body: { ok: true } })
    expect(await handle({ headers: await headers(await jwt()), body: JSON.stringify(env) })).toEqual({ status: 200, body: { ok: true } })
    expect(seen).toEqual([env.id])

    const replayed = await jwt()
    await handle({ headers: await headers(replayed), body: env })
    for (const token of [replayed, await jwt(stranger), await jwt(service, { aud: 'did:web:other.example' }), await jwt(service, { lxm: 'money.svc.app.getConfig' }), 'garbage']) {
      expect(await handle({ headers: await headers(token), body: env })).toMatchObject({ status: 401, body: { error: 'InvalidSignature' } })
    }
    expect(await handle({ headers: {}, body: env })).toMatchObject({ status: 401, body: { error: 'InvalidSignature' } })
    // a token of another issuer is refused before the verifier resolves its key or records its jti
    const foreign = await jwt(stranger)
    expect(await handle({ headers: await headers(foreign), body: env })).toMatchObject({ status: 401, body: { error: 'InvalidSignature' } })
    expect(await redis.keys(`${iso.redisPrefix}jti:${stranger.did}:*`)).toEqual([])
    const resolving = createReceiveEventHandler({
      serviceDid: service.did,
      verifier: createServiceAuthVerifier({ serviceDid: appDid, plcUrl: 'http://127.0.0.1:9', redis, replayKeyPrefix: `${iso.redisPrefix}jti:` }),
      store: createMemoryClaimStore(),
      handlers: {},
    })
    const evil = `${Buffer.from('{"alg":"ES256","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ iss: 'did:web:internal.evil.example', aud: appDid, lxm: 'money.svc.event.receiveEvent', exp: Math.floor(Date.now() / 1000) + 60, iat: Math.floor(Date.now() / 1000), jti: 'x' })).toString('base64url')}.c2ln`
    expect(await resolving({ headers: await headers(evil), body: env })).toMatchObject({ status: 401, body: { error: 'InvalidSignature', message: expect.stringMatching(/issuer is not the service/) } })
    const oldVersion = envelope({ apiVersion: '2025-01' })
    expect(await handle({ headers: { ...(await headers(await jwt())), 'svc-delivery-id': oldVersion.id }, body: oldVersion })).toMatchObject({
      status: 400,
      body: { error: 'ApiVersionMismatch' },
    })
    expect(await handle({ headers: { ...(await headers(await jwt())), 'svc-delivery-id': 'whd_other' }, body: env })).toMatchObject({ status: 400 })
    expect(await handle({ headers: await headers(await jwt()), body: { ...env, data: undefined } })).toMatchObject({ status: 400, body: { error: 'InvalidEnvelope' } })
  })

  it('with the environment\'s secret, the body\'s signature is checked too: a token read off a test delivery cannot carry a forged live event', async () => {
    const LIVE_SECRET = newSecret()
    const processed: EventEnvelope[] = []
    // the token is valid (one token serves test and live deliveries); only the signature can tell the body
    const live = createReceiveEventHandler({
      serviceDid: 'did:web:svc.example',
      verifyServiceAuth: async () => ({ iss: 'did:web:svc.example' }),
      environment: 'live',
      secret: LIVE_SECRET,
      store: createMemoryClaimStore(),
      handlers: { 'payment.completed': async (e) => void processed.push(e) },
    })
    const auth = { authorization: 'Bearer token-of-a-test-delivery' }
    const forged = envelope({ environment: 'live' })
    // unsigned, signed with the test secret, or a signed test body swapped for the forged one: all refused
    const testSigned = signed(envelope({ environment: 'test' }), { secret: SECRET })
    for (const req of [
      { headers: { ...auth, 'svc-delivery-id': forged.id, 'svc-api-version': API_VERSION }, body: JSON.stringify(forged) },
      { headers: { ...auth, ...signed(forged, { secret: SECRET }).headers }, body: JSON.stringify(forged) },
      { headers: { ...auth, ...testSigned.headers, 'svc-delivery-id': forged.id }, body: JSON.stringify({ ...forged, id: JSON.parse(testSigned.rawBody).id }) },
    ]) {
      expect(await live(req)).toMatchObject({ status: 401, body: { error: 'InvalidSignature' } })
    }
    expect(processed).toEqual([])
    // the service's own live delivery: signed with the live secret, over the raw body
    const real = signed(envelope({ environment: 'live' }), { secret: LIVE_SECRET })
    expect(await live({ headers: { ...auth, ...real.headers }, body: Buffer.from(real.rawBody) })).toEqual({ status: 200, body: { ok: true } })
    expect(processed.map((e) => e.id)).toEqual([JSON.parse(real.rawBody).id])
    // a parsed body cannot be checked: a configuration mistake, not the sender's
    expect(await live({ headers: { ...auth, ...real.headers }, body: JSON.parse(real.rawBody) })).toMatchObject({ status: 500 })
    // a secret named but unset (a missing environment variable) is refused at construction, not skipped
    const unset: { secret?: string } = { secret: undefined }
    expect(() => createReceiveEventHandler({ serviceDid: 'did:web:svc.example', verifyServiceAuth: async () => ({ iss: 'did:web:svc.example' }), ...unset, store: createMemoryClaimStore(), handlers: {} })).toThrow(TypeError)
  })

  it("a service DID document that cannot be fetched just now is 503 ServiceUnavailable (retried), not InvalidSignature", async () => {
    const key = await generateDidKeyKeypair('ES256K')
    const serviceDid = 'did:plc:ewvi7nxzyoun6zhxrhs64oiz'
    const appDid = 'did:web:app.example'
    // a PLC directory that refuses the connection
    const verifier = createServiceAuthVerifier({ serviceDid: appDid, plcUrl: 'http://127.0.0.1:9', redis, replayKeyPrefix: `${iso.redisPrefix}jti:` })
    const handle = createReceiveEventHandler({ serviceDid, verifier, store: createMemoryClaimStore(), handlers: { 'payment.completed': async () => undefined } })
    const env = envelope()
    const token = await mintServiceJwt({ keypair: key.keypair, iss: serviceDid, aud: appDid, lxm: 'money.svc.event.receiveEvent' })
    const headers = { authorization: `Bearer ${token}`, 'svc-delivery-id': env.id, 'svc-api-version': API_VERSION }
    expect(await handle({ headers, body: env })).toMatchObject({ status: 503, body: { error: 'ServiceUnavailable' } })
  })

  it('accepts an injected verifyServiceAuth and checks the issuer', async () => {
    const opts = { store: createMemoryClaimStore(), handlers: { 'payment.completed': async () => undefined }, serviceDid: 'did:web:svc.example' }
    const ok = createReceiveEventHandler({ ...opts, verifyServiceAuth: async () => ({ iss: 'did:web:svc.example' }) })
    const wrongIss = createReceiveEventHandler({ ...opts, verifyServiceAuth: async () => ({ iss: 'did:web:evil.example' }) })
    const refusing = createReceiveEventHandler({ ...opts, verifyServiceAuth: async () => Promise.reject(new Error('no')) })
    const env = envelope()
    const sent = (e: { id: string }) => ({ authorization: 'Bearer x', 'svc-delivery-id': e.id, 'svc-api-version': API_VERSION })
    expect(await ok({ headers: sent(env), body: env })).toEqual({ status: 200, body: { ok: true } })
    expect(await wrongIss({ headers: sent(env), body: env })).toMatchObject({ status: 401 })
    expect(await refusing({ headers: sent(env), body: env })).toMatchObject({ status: 401 })
    // the service sends both headers on every delivery: a call without one is refused
    const other = envelope()
    expect(await ok({ headers: { authorization: 'Bearer x', 'svc-api-version': API_VERSION }, body: other })).toMatchObject({ status: 400, body: { error: 'InvalidEnvelope' } })
    expect(await ok({ headers: { authorization: 'Bearer x', 'svc-delivery-id': other.id }, body: other })).toMatchObject({ status: 400, body: { error: 'ApiVersionMismatch' } })
    expect(() => createReceiveEventHandler(opts as any)).toThrow(TypeError)
  })
})
