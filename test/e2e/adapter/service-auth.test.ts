/**
 * App service-auth on /xrpc: every refusal with 401 and its precise code, unknown apps (404
 * AppNotRegistered), and both accepted algorithms.
 */
import { randomBytes } from 'node:crypto'
import { generateDidKeyKeypair, mintServiceJwt } from '@svc/service-auth'
import { startStack, type TestApp, type TestStack } from '../../stack'
import {
  bearer,
  claims,
  craftJwt,
  expectError,
  expectOk,
  freshConfig,
  GET_CONFIG,
  nowSeconds,
  registerKeypairApp,
  UPDATE_CONFIG,
  xrpcGet,
  xrpcPost,
  type HttpResult,
} from './helpers'

let stack: TestStack
let app: TestApp

beforeAll(async () => {
  stack = await startStack('service-auth')
  app = await stack.newApp()
})
afterAll(async () => {
  await stack.stop()
})

const getConfigWith = (headers: Record<string, string>) => xrpcGet(stack, GET_CONFIG, { environment: 'test' }, headers)
const updateConfigWith = (headers: Record<string, string>) =>
  xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', modules: { tickets: true } }, headers)

/** A refused update must leave the configuration as registered. */
async function expectUnchanged(a: TestApp = app) {
  const res = await xrpcGet(stack, GET_CONFIG, { environment: 'test' }, bearer(await a.jwt(GET_CONFIG)))
  expect(expectOk(res)).toEqual(freshConfig(a.did, 'test'))
}

function expectNoSecretEcho(res: HttpResult, secret: string) {
  expect(res.text).not.toContain(secret)
}

describe('missing or malformed credentials', () => {
  it('no Authorization header is 401 AuthMissing', async () => {
    expectError(await getConfigWith({}), 401, 'AuthMissing')
    expectError(await updateConfigWith({}), 401, 'AuthMissing')
    await expectUnchanged()
  })

  it('an empty Authorization header is 401 AuthMissing', async () => {
    expectError(await getConfigWith({ authorization: '' }), 401, 'AuthMissing')
  })

  it.each([
    ['garbage', 'Bearer garbage'],
    ['a bare JWT-shaped string', 'Bearer a.b.c'],
    ['a Basic credential', `Basic ${Buffer.from('user:pass').toString('base64')}`],
    ['Bearer with nothing after it', 'Bearer '],
    ['two tokens', 'Bearer x.y.z x.y.z'],
  ])('%s is 401 BadJwt', async (_label, header) => {
    expectError(await getConfigWith({ authorization: header }), 401, 'BadJwt')
  })

  it('a valid JWT without the Bearer scheme is 401 BadJwt', async () => {
    const token = await app.jwt(GET_CONFIG)
    expectError(await getConfigWith({ authorization: token }), 401, 'BadJwt')
  })

  it('a JWT with alg none / HS256 is 401 BadJwt', async () => {
    const kp = await generateDidKeyKeypair('ES256K')
    const payload = claims(stack, app.did, GET_CONFIG)
    for (const alg of ['none', 'HS256']) {
      const token = await craftJwt(kp.keypair, { typ: 'JWT', alg }, payload)
      expectError(await getConfigWith(bearer(token)), 401, 'BadJwt')
    }
  })

  it('a JWT without jti is 401 BadJwt', async () => {
    const kp = await registerKeypairApp(stack)
    const { jti: _drop, ...noJti } = claims(stack, kp.did, GET_CONFIG)
    const token = await craftJwt(kp.keypair, { typ: 'JWT', alg: 'ES256K' }, noJti)
    expectError(await getConfigWith(bearer(token)), 401, 'BadJwt')
  })
})

describe('credentials that are not service-auth', () => {
  it('an API key on /xrpc is 401 ApiKeyNotAccepted, and is not echoed', async () => {
    const key = await app.apiKey('test')
    const get = await getConfigWith(bearer(key))
    expectError(get, 401, 'ApiKeyNotAccepted')
    expectNoSecretEcho(get, key)
    const post = await updateConfigWith(bearer(key))
    expectError(post, 401, 'ApiKeyNotAccepted')
    expectNoSecretEcho(post, key)
    await expectUnchanged()
  })

  it('a live-shaped API key on /xrpc is 401 ApiKeyNotAccepted', async () => {
    expectError(await getConfigWith(bearer(`svc_rk_live_${randomBytes(24).toString('base64url')}`)), 401, 'ApiKeyNotAccepted')
  })

  it('a webhook signing secret on /xrpc is 401 WebhookSecretNotAccepted, and is not echoed', async () => {
    const secret = `whsec_${randomBytes(24).toString('base64')}`
    const get = await getConfigWith(bearer(secret))
    expectError(get, 401, 'WebhookSecretNotAccepted')
    expectNoSecretEcho(get, secret)
    const post = await updateConfigWith(bearer(secret))
    expectError(post, 401, 'WebhookSecretNotAccepted')
    await expectUnchanged()
  })
})

describe('JWT claim and signature checks', () => {
  it('an expired JWT is 401 JwtExpired', async () => {
    const kp = await registerKeypairApp(stack)
    const iat = nowSeconds() - 600
    const token = await craftJwt(kp.keypair, { typ: 'JWT', alg: kp.alg }, claims(stack, kp.did, GET_CONFIG, { iat, exp: iat + 60 }))
    expectError(await getConfigWith(bearer(token)), 401, 'JwtExpired')
    const upd = await craftJwt(kp.keypair, { typ: 'JWT', alg: kp.alg }, claims(stack, kp.did, UPDATE_CONFIG, { iat, exp: iat + 60 }))
    expectError(await updateConfigWith(bearer(upd)), 401, 'JwtExpired')
  })

  it('a JWT living longer than 5 minutes is 401 JwtLifetimeTooLong', async () => {
    const token = await app.jwt(GET_CONFIG, { expiresInSeconds: 3600 })
    expectError(await getConfigWith(bearer(token)), 401, 'JwtLifetimeTooLong')
    const upd = await app.jwt(UPDATE_CONFIG, { expiresInSeconds: 3600 })
    expectError(await updateConfigWith(bearer(upd)), 401, 'JwtLifetimeTooLong')
    await expectUnchanged()
  })

  it('a JWT of exactly 5 minutes is accepted', async () => {
    const token = await app.jwt(GET_CONFIG, { expiresInSeconds: 300 })
    expect(expectOk(await getConfigWith(bearer(token)))).toEqual(freshConfig(app.did, 'test'))
  })

  it('a JWT for another audience is 401 BadJwtAudience', async () => {
    const token = await app.jwt(GET_CONFIG, { aud: 'did:web:other-service.test' })
    expectError(await getConfigWith(bearer(token)), 401, 'BadJwtAudience')
    const upd = await app.jwt(UPDATE_CONFIG, { aud: 'did:web:other-service.test' })
    expectError(await updateConfigWith(bearer(upd)), 401, 'BadJwtAudience')
    await expectUnchanged()
  })

  it('a JWT for another method (lxm) is 401 BadJwtLexiconMethod', async () => {
    expectError(await getConfigWith(bearer(await app.jwt(UPDATE_CONFIG))), 401, 'BadJwtLexiconMethod')
    expectError(await updateConfigWith(bearer(await app.jwt(GET_CONFIG))), 401, 'BadJwtLexiconMethod')
    await expectUnchanged()
  })

  it('a JWT without lxm is 401 BadJwtLexiconMethod', async () => {
    const kp = await registerKeypairApp(stack)
    const { lxm: _drop, ...noLxm } = claims(stack, kp.did, GET_CONFIG)
    const token = await craftJwt(kp.keypair, { typ: 'JWT', alg: kp.alg }, noLxm)
    expectError(await getConfigWith(bearer(token)), 401, 'BadJwtLexiconMethod')
  })

  it('a JWT signed by another key than the issuer DID is 401 BadJwtSignature', async () => {
    const kp = await registerKeypairApp(stack)
    const other = await generateDidKeyKeypair('ES256K')
    const token = await craftJwt(other.keypair, { typ: 'JWT', alg: 'ES256K' }, claims(stack, kp.did, GET_CONFIG))
    expectError(await getConfigWith(bearer(token)), 401, 'BadJwtSignature')
    const upd = await craftJwt(other.keypair, { typ: 'JWT', alg: 'ES256K' }, claims(stack, kp.did, UPDATE_CONFIG))
    expectError(await updateConfigWith(bearer(upd)), 401, 'BadJwtSignature')
  })

  it('a valid JWT whose payload was altered after signing is 401 BadJwtSignature', async () => {
    const victim = await stack.newApp()
    const token = await app.jwt(GET_CONFIG)
    const [h, p, s] = token.split('.') as [string, string, string]
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'))
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...payload, iss: victim.did })).toString('base64url')}.${s}`
    expectError(await getConfigWith(bearer(forged)), 401, 'BadJwtSignature')
  })

  it('the same JWT twice is 401 JwtReplayed the second time', async () => {
    const token = await app.jwt(GET_CONFIG)
    expect(expectOk(await getConfigWith(bearer(token)))).toEqual(freshConfig(app.did, 'test'))
    expectError(await getConfigWith(bearer(token)), 401, 'JwtReplayed')
    expectError(await getConfigWith(bearer(token)), 401, 'JwtReplayed')
  })

  it('a replayed updateConfig JWT is 401 JwtReplayed and changes nothing', async () => {
    const other = await stack.newApp()
    const token = await other.jwt(UPDATE_CONFIG)
    const first = await xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', ticketing: { qrPasses: true } }, bearer(token))
    expect(expectOk(first).appConfig.ticketing).toEqual({ qrPasses: true, walletPasses: false })
    const replay = await xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', ticketing: { walletPasses: true } }, bearer(token))
    expectError(replay, 401, 'JwtReplayed')
    const read = expectOk(await xrpcGet(stack, GET_CONFIG, { environment: 'test' }, bearer(await other.jwt(GET_CONFIG))))
    expect(read.appConfig.ticketing).toEqual({ qrPasses: true, walletPasses: false })
  })

  it('concurrent uses of one JWT: exactly one succeeds, the others are 401 JwtReplayed', async () => {
    const token = await app.jwt(GET_CONFIG)
    const results = await Promise.all(Array.from({ length: 8 }, () => getConfigWith(bearer(token))))
    const ok = results.filter((r) => r.status === 200)
    const replayed = results.filter((r) => r.status === 401 && r.body?.error === 'JwtReplayed')
    expect({ ok: ok.length, replayed: replayed.length }).toEqual({ ok: 1, replayed: 7 })
  })
})

describe('unknown apps', () => {
  it('a valid JWT from an unregistered did:key is 404 AppNotRegistered on getConfig', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256K')
    const token = await mintServiceJwt({ keypair, iss: did, aud: stack.serviceDid, lxm: GET_CONFIG })
    expectError(await getConfigWith(bearer(token)), 404, 'AppNotRegistered')
    const live = await mintServiceJwt({ keypair, iss: did, aud: stack.serviceDid, lxm: GET_CONFIG })
    expectError(await xrpcGet(stack, GET_CONFIG, { environment: 'live' }, bearer(live)), 404, 'AppNotRegistered')
  })

  it('a valid JWT from an unregistered did:key is 404 AppNotRegistered on updateConfig, and creates nothing', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256')
    const token = await mintServiceJwt({ keypair, iss: did, aud: stack.serviceDid, lxm: UPDATE_CONFIG })
    expectError(await updateConfigWith(bearer(token)), 404, 'AppNotRegistered')
    expect(await stack.models.App.countDocuments({ did })).toBe(0)
    expect(await stack.models.AppEnvironment.countDocuments({ appDid: did })).toBe(0)
  })

  it('a did:web issuer that cannot be resolved is 401 UnresolvableIssuer', async () => {
    const kp = await generateDidKeyKeypair('ES256K')
    const token = await craftJwt(kp.keypair, { typ: 'JWT', alg: 'ES256K' }, claims(stack, 'did:web:127.0.0.1', GET_CONFIG))
    expectError(await getConfigWith(bearer(token)), 401, 'UnresolvableIssuer')
  })
})

describe('accepted algorithms', () => {
  it.each(['ES256K', 'ES256'] as const)('%s is accepted on getConfig and updateConfig', async (alg) => {
    const a = await stack.newApp({ alg })
    const token = await a.jwt(GET_CONFIG)
    expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString('utf8')).alg).toBe(alg)
    expect(expectOk(await getConfigWith(bearer(token)))).toEqual(freshConfig(a.did, 'test'))
    const upd = await xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', modules: { tickets: true } }, bearer(await a.jwt(UPDATE_CONFIG)))
    expect(expectOk(upd).appConfig.modules).toEqual({ tickets: true })
  })

  it.each(['ES256K', 'ES256'] as const)('a hand-crafted %s token of a registered app is accepted', async (alg) => {
    const kp = await registerKeypairApp(stack, { alg })
    const token = await craftJwt(kp.keypair, { typ: 'JWT', alg }, claims(stack, kp.did, GET_CONFIG))
    expect(expectOk(await getConfigWith(bearer(token)))).toEqual(freshConfig(kp.did, 'test'))
  })

  it('a token whose header alg does not match the key type is refused', async () => {
    const kp = await registerKeypairApp(stack, { alg: 'ES256K' })
    const token = await craftJwt(kp.keypair, { typ: 'JWT', alg: 'ES256' }, claims(stack, kp.did, GET_CONFIG))
    const res = await getConfigWith(bearer(token))
    expectError(res, 401, 'BadJwtSignature')
  })
})
