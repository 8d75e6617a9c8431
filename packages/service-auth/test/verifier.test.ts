import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

import type { Keypair } from '@atproto/crypto'
import Redis from 'ioredis'

import {
  createServiceAuthVerifier,
  FORCED_REFRESHES_PER_MINUTE,
  generateDidKeyKeypair,
  keypairFromPrivateKeyHex,
  mintServiceJwt,
  type ServiceAuthVerifier,
} from '../src'

const SERVICE_DID = 'did:web:payments.svc.test'
const NSID = 'money.svc.payment.create'
const prefix = `test:service-auth:${randomBytes(6).toString('hex')}:`

let redis: Redis
let verifier: ServiceAuthVerifier
let didWebServer: Server
let plcServer: Server
let didWebDid: string
let plcUrl: string
/** DID documents the local PLC directory serves, by DID. */
const plcDocs = new Map<string, unknown>()
/** The DIDs the PLC directory was asked for, in order. */
const plcAsked: string[] = []
let plcDown = false
let didWebDoc: unknown

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
const now = () => Math.floor(Date.now() / 1000)

/** Builds and signs a JWT by hand, exactly as createServiceJwt does, with any header and claims. */
async function craftJwt(keypair: Keypair, header: Record<string, unknown>, payload: Record<string, unknown>): Promise<string> {
  const toSign = `${b64url(header)}.${b64url(payload)}`
  const sig = await keypair.sign(new TextEncoder().encode(toSign))
  return `${toSign}.${Buffer.from(sig).toString('base64url')}`
}

function claims(iss: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const iat = now()
  return { iss, aud: SERVICE_DID, lxm: NSID, iat, exp: iat + 60, jti: randomBytes(16).toString('hex'), ...overrides }
}

async function expectCode(promise: Promise<unknown>, code: string, token?: string): Promise<void> {
  const err = await promise.then(
    () => {
      throw new Error(`expected ${code}, got success`)
    },
    (e: unknown) => e,
  )
  expect(err).toMatchObject({ name: 'ContractError', code, status: 401 })
  if (token) expect((err as Error).message).not.toContain(token)
}

function didDocument(did: string, keypair: Keypair) {
  return {
    '@context': ['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/multikey/v1'],
    id: did,
    alsoKnownAs: [],
    verificationMethod: [
      {
        id: `${did}#atproto`,
        type: 'Multikey',
        controller: did,
        publicKeyMultibase: keypair.did().slice('did:key:'.length),
      },
    ],
    service: [],
  }
}

function randomPlcDid(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567'
  return `did:plc:${Array.from(randomBytes(24), (b) => alphabet[b % 32]).join('')}`
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return (server.address() as AddressInfo).port
}

async function close(server: Server | undefined): Promise<void> {
  if (!server) return
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
}

beforeAll(async () => {
  // the tests' Redis database (jest's global setup), not the machine's default one
  redis = new Redis(process.env.SVC_TEST_REDIS_URL!, { lazyConnect: true, maxRetriesPerRequest: 1 })
  await redis.connect()

  didWebServer = createServer((req, res) => {
    if (req.url === '/.well-known/did.json' && didWebDoc) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(didWebDoc))
    } else {
      res.writeHead(404).end()
    }
  })
  const webPort = await listen(didWebServer)
  didWebDid = `did:web:127.0.0.1%3A${webPort}`

  plcServer = createServer((req, res) => {
    const did = decodeURIComponent((req.url ?? '/').slice(1))
    const doc = plcDocs.get(did)
    plcAsked.push(did)
    if (plcDown) res.writeHead(503).end('down')
    else if (req.method === 'GET' && doc) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc))
    else res.writeHead(404).end()
  })
  plcUrl = `http://127.0.0.1:${await listen(plcServer)}`

  verifier = createServiceAuthVerifier({ serviceDid: SERVICE_DID, plcUrl, redis, replayKeyPrefix: prefix, allowInsecureDidWeb: true })
})

afterAll(async () => {
  if (redis) {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
      cursor = next
      if (keys.length) await redis.del(...keys)
    } while (cursor !== '0')
    await redis.quit()
  }
  await close(didWebServer)
  await close(plcServer)
})

describe('valid tokens', () => {
  it.each(['ES256K', 'ES256'] as const)('accepts a did:key %s token and records its jti until exp', async (alg) => {
    const { did, keypair } = await generateDidKeyKeypair(alg)
    const token = await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID })
    const result = await verifier.verify(`Bearer ${token}`, NSID)
    expect(result).toMatchObject({ iss: did, aud: SERVICE_DID, lxm: NSID })
    expect(result.jti).toMatch(/^[0-9a-f]{32}$/)
    expect(result.exp - result.iat).toBe(60)
    const ttl = await redis.ttl(`${prefix}${did}:${result.jti}`)
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(60 + 30 + 1)
  })

  it('accepts a token exactly at the maximum lifetime', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256K')
    const token = await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID, expiresInSeconds: 300 })
    await expect(verifier.verify(`Bearer ${token}`, NSID)).resolves.toMatchObject({ iss: did })
  })

  it('round-trips a keypair through its private key hex', async () => {
    const { did, privateKeyHex } = await generateDidKeyKeypair('ES256')
    const keypair = await keypairFromPrivateKeyHex(privateKeyHex, 'ES256')
    expect(keypair.did()).toBe(did)
    const token = await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID })
    await expect(verifier.verify(`Bearer ${token}`, NSID)).resolves.toMatchObject({ iss: did })
  })
})

describe('refused before the JWT is looked at', () => {
  it('missing header → AuthMissing', async () => {
    await expectCode(verifier.verify(undefined, NSID), 'AuthMissing')
    await expectCode(verifier.verify('   ', NSID), 'AuthMissing')
  })

  it('API key → ApiKeyNotAccepted', async () => {
    await expectCode(verifier.verify('Bearer svc_rk_test_abcdef0123456789', NSID), 'ApiKeyNotAccepted')
    await expectCode(verifier.verify('Bearer svc_rk_live_abcdef0123456789', NSID), 'ApiKeyNotAccepted')
  })

  it('webhook secret → WebhookSecretNotAccepted', async () => {
    await expectCode(verifier.verify('Bearer whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', NSID), 'WebhookSecretNotAccepted')
  })

  it('malformed → BadJwt', async () => {
    for (const header of ['Bearer', 'Bearer abc.def', 'Bearer a.b.c.d', 'Basic dXNlcjpwYXNz', 'Bearer a.b.c extra', 'Bearer a.b.c']) {
      await expectCode(verifier.verify(header, NSID), 'BadJwt')
    }
    // the message says what is wrong with it
    const message = async (header: string) => ((await verifier.verify(header, NSID).catch((e: Error) => e)) as Error).message
    expect(await message('Basic dXNlcjpwYXNz')).toBe('expected Authorization: Bearer <service-auth JWT>')
    expect(await message(`Bearer ${'a'.repeat(9000)}.b.c`)).toBe('the JWT is longer than 8192 characters')
    expect(await message('Bearer abc.def')).toBe('not a JWT: three base64url parts separated by dots')
  })
})

describe('claims and header', () => {
  it('wrong alg (HS256) → BadJwt', async () => {
    const { did } = await generateDidKeyKeypair('ES256K')
    const token = `${b64url({ typ: 'JWT', alg: 'HS256' })}.${b64url(claims(did))}.${randomBytes(32).toString('base64url')}`
    await expectCode(verifier.verify(`Bearer ${token}`, NSID), 'BadJwt', token)
  })

  it('alg none → BadJwt', async () => {
    const { did } = await generateDidKeyKeypair('ES256K')
    const token = `${b64url({ typ: 'JWT', alg: 'none' })}.${b64url(claims(did))}.AA`
    await expectCode(verifier.verify(`Bearer ${token}`, NSID), 'BadJwt')
  })

  it('a jti too long or not printable ASCII → BadJwt saying which', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256K')
    const header = { typ: 'JWT', alg: 'ES256K' }
    const message = async (jti: string) => (await verifier.verify(`Bearer ${await craftJwt(keypair, header, claims(did, { jti }))}`, NSID).catch((e: Error) => e)) as Error
    expect(await message('x'.repeat(5000))).toMatchObject({ code: 'BadJwt', message: 'jwt jti is longer than 256 characters' })
    expect(await message('a b')).toMatchObject({ code: 'BadJwt', message: 'jwt jti must be printable ASCII without spaces' })
    expect(await message('')).toMatchObject({ code: 'BadJwt', message: 'jwt jti required' })
  })

  it('missing jti or iat → BadJwt', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256K')
    const header = { typ: 'JWT', alg: 'ES256K' }
    const noJti = await craftJwt(keypair, header, claims(did, { jti: undefined }))
    await expectCode(verifier.verify(`Bearer ${noJti}`, NSID), 'BadJwt')
    const noIat = await craftJwt(keypair, header, claims(did, { iat: undefined }))
    await expectCode(verifier.verify(`Bearer ${noIat}`, NSID), 'BadJwt')
  })

  it('expired → JwtExpired', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256K')
    const token = await craftJwt(keypair, { typ: 'JWT', alg: 'ES256K' }, claims(did, { iat: now() - 120, exp: now() - 60 }))
    await expectCode(verifier.verify(`Bearer ${token}`, NSID), 'JwtExpired', token)
  })

  it('lifetime too long → JwtLifetimeTooLong', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256')
    const token = await craftJwt(keypair, { typ: 'JWT', alg: 'ES256' }, claims(did, { exp: now() + 3600 }))
    await expectCode(verifier.verify(`Bearer ${token}`, NSID), 'JwtLifetimeTooLong', token)
  })

  it('wrong aud → BadJwtAudience', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256K')
    const token = await mintServiceJwt({ keypair, iss: did, aud: 'did:web:someone-else.test', lxm: NSID })
    await expectCode(verifier.verify(`Bearer ${token}`, NSID), 'BadJwtAudience', token)
  })

  it('wrong lxm → BadJwtLexiconMethod', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256K')
    const token = await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: 'money.svc.payment.refund' })
    await expectCode(verifier.verify(`Bearer ${token}`, NSID), 'BadJwtLexiconMethod', token)
  })
})

describe('signature', () => {
  it('signed by another key → BadJwtSignature, and the jti is not burned', async () => {
    const issuer = await generateDidKeyKeypair('ES256K')
    const other = await generateDidKeyKeypair('ES256K')
    const payload = claims(issuer.did)
    const forged = await craftJwt(other.keypair, { typ: 'JWT', alg: 'ES256K' }, payload)
    await expectCode(verifier.verify(`Bearer ${forged}`, NSID), 'BadJwtSignature', forged)
    expect(await redis.exists(`${prefix}${issuer.did}:${String(payload.jti)}`)).toBe(0)

    const genuine = await craftJwt(issuer.keypair, { typ: 'JWT', alg: 'ES256K' }, payload)
    await expect(verifier.verify(`Bearer ${genuine}`, NSID)).resolves.toMatchObject({ jti: payload.jti })
  })

  it('header alg not matching the issuer key type → BadJwtSignature', async () => {
    const issuer = await generateDidKeyKeypair('ES256K')
    const p256 = await generateDidKeyKeypair('ES256')
    const token = await craftJwt(p256.keypair, { typ: 'JWT', alg: 'ES256' }, claims(issuer.did))
    await expectCode(verifier.verify(`Bearer ${token}`, NSID), 'BadJwtSignature')
  })
})

describe('replay', () => {
  it('the same token twice → JwtReplayed', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256K')
    const token = await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID })
    await verifier.verify(`Bearer ${token}`, NSID)
    await expectCode(verifier.verify(`Bearer ${token}`, NSID), 'JwtReplayed', token)
  })

  it('10 concurrent copies → exactly 1 success, 9 JwtReplayed', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256')
    const token = await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID })
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => verifier.verify(`Bearer ${token}`, NSID)))
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected')
    expect(rejected).toHaveLength(9)
    for (const r of rejected) expect(r.reason).toMatchObject({ name: 'ContractError', code: 'JwtReplayed' })
  })

  it('with a replay scope: the same token again for the same scope passes, for another scope or none → JwtReplayed', async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256K')
    const token = await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID })
    const results = await Promise.all(Array.from({ length: 5 }, () => verifier.verify(`Bearer ${token}`, NSID, { replayScope: 'order-1' })))
    expect(results.map((r) => r.iss)).toEqual(Array(5).fill(did))
    await expectCode(verifier.verify(`Bearer ${token}`, NSID, { replayScope: 'order-2' }), 'JwtReplayed', token)
    await expectCode(verifier.verify(`Bearer ${token}`, NSID), 'JwtReplayed', token)
  })
})

describe('issuer resolution', () => {
  it('did:web issuer served over http on 127.0.0.1', async () => {
    const { keypair } = await generateDidKeyKeypair('ES256K')
    didWebDoc = didDocument(didWebDid, keypair)
    const token = await mintServiceJwt({ keypair, iss: didWebDid, aud: SERVICE_DID, lxm: NSID })
    await expect(verifier.verify(`Bearer ${token}`, NSID)).resolves.toMatchObject({ iss: didWebDid })
  })

  it('a forged token naming a did:web host inside (another loopback address, written as hex too) connects nowhere', async () => {
    let connections = 0
    const inside = createServer((socket) => {
      connections++
      socket.destroy()
    })
    await new Promise<void>((resolve) => inside.listen(0, '127.0.0.2', resolve))
    const port = (inside.address() as AddressInfo).port
    try {
      const strict = createServiceAuthVerifier({ serviceDid: SERVICE_DID, plcUrl, redis, replayKeyPrefix: prefix })
      const { keypair } = await generateDidKeyKeypair('ES256K')
      for (const host of ['127.0.0.2', '0x7f000002']) {
        const token = await mintServiceJwt({ keypair, iss: `did:web:${host}%3A${port}`, aud: SERVICE_DID, lxm: NSID })
        await expectCode(strict.verify(`Bearer ${token}`, NSID), 'UnresolvableIssuer')
      }
      expect(connections).toBe(0)
    } finally {
      await new Promise((resolve) => inside.close(resolve))
    }
  })

  it('did:web on a loopback host without allowInsecureDidWeb → UnresolvableIssuer', async () => {
    const { keypair } = await generateDidKeyKeypair('ES256K')
    didWebDoc = didDocument(didWebDid, keypair)
    const strict = createServiceAuthVerifier({ serviceDid: SERVICE_DID, plcUrl, redis, replayKeyPrefix: prefix })
    const token = await mintServiceJwt({ keypair, iss: didWebDid, aud: SERVICE_DID, lxm: NSID })
    await expectCode(strict.verify(`Bearer ${token}`, NSID), 'UnresolvableIssuer')
  })

  it('did:plc issuer resolved through the configured PLC directory', async () => {
    const { keypair } = await generateDidKeyKeypair('ES256')
    const did = randomPlcDid()
    plcDocs.set(did, didDocument(did, keypair))
    const token = await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID })
    await expect(verifier.verify(`Bearer ${token}`, NSID)).resolves.toMatchObject({ iss: did })
  })

  it('did:plc key rotation: a cached stale key is refetched once on signature failure, and not again within 30 s', async () => {
    const oldKey = await generateDidKeyKeypair('ES256K')
    const newKey = await generateDidKeyKeypair('ES256K')
    const did = randomPlcDid()
    plcDocs.set(did, didDocument(did, oldKey.keypair))
    await verifier.verify(`Bearer ${await mintServiceJwt({ keypair: oldKey.keypair, iss: did, aud: SERVICE_DID, lxm: NSID })}`, NSID)
    plcDocs.set(did, didDocument(did, newKey.keypair))
    const token = await mintServiceJwt({ keypair: newKey.keypair, iss: did, aud: SERVICE_DID, lxm: NSID })
    await expect(verifier.verify(`Bearer ${token}`, NSID)).resolves.toMatchObject({ iss: did })
    const asked = () => plcAsked.filter((d) => d === did).length
    expect(asked()).toBe(2)
    // a token signed by a key the document never had is refused without asking again within 30 s: forged tokens
    // cannot make the service hammer the directory
    const forger = await generateDidKeyKeypair('ES256K')
    for (let i = 0; i < 3; i++) {
      await expectCode(verifier.verify(`Bearer ${await mintServiceJwt({ keypair: forger.keypair, iss: did, aud: SERVICE_DID, lxm: NSID })}`, NSID), 'BadJwtSignature')
    }
    expect(asked()).toBe(2)
  })

  it(`forged tokens naming issuers already cached refetch at most ${FORCED_REFRESHES_PER_MINUTE} documents a minute in all`, async () => {
    const fresh = createServiceAuthVerifier({ serviceDid: SERVICE_DID, plcUrl, redis, replayKeyPrefix: prefix })
    const forger = await generateDidKeyKeypair('ES256K')
    const issuers = await Promise.all(
      Array.from({ length: FORCED_REFRESHES_PER_MINUTE + 5 }, async () => {
        const { keypair } = await generateDidKeyKeypair('ES256K')
        const did = randomPlcDid()
        plcDocs.set(did, didDocument(did, keypair))
        return { did, keypair }
      }),
    )
    // each cached by a real token: no lookup is left for the address's limit to count
    for (const { did, keypair } of issuers) await fresh.verify(`Bearer ${await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID })}`, NSID)
    const asked = () => plcAsked.filter((d) => issuers.some((i) => i.did === d)).length
    expect(asked()).toBe(issuers.length)
    for (const { did } of issuers) {
      await expectCode(fresh.verify(`Bearer ${await mintServiceJwt({ keypair: forger.keypair, iss: did, aud: SERVICE_DID, lxm: NSID })}`, NSID), 'BadJwtSignature')
    }
    // before: one refetch per issuer
    expect(asked()).toBe(issuers.length + FORCED_REFRESHES_PER_MINUTE)
  })

  it('a PLC directory that fails for now (503, or refusing connections) → 503 ServiceUnavailable, worth a retry; once it answers, verified', async () => {
    const { keypair } = await generateDidKeyKeypair('ES256K')
    const did = randomPlcDid()
    plcDocs.set(did, didDocument(did, keypair))
    const token = () => mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID })
    plcDown = true
    try {
      await expect(verifier.verify(`Bearer ${await token()}`, NSID)).rejects.toMatchObject({ code: 'ServiceUnavailable', status: 503 })
    } finally {
      plcDown = false
    }
    // a port nothing listens on any more
    const gone = createServer()
    const gonePort = await listen(gone)
    await close(gone)
    const away = createServiceAuthVerifier({ serviceDid: SERVICE_DID, plcUrl: `http://127.0.0.1:${gonePort}`, redis, replayKeyPrefix: prefix })
    await expect(away.verify(`Bearer ${await token()}`, NSID)).rejects.toMatchObject({ code: 'ServiceUnavailable', status: 503 })
    // a directory whose name does not resolve (a DNS outage): before, 401 UnresolvableIssuer, and remembered a minute
    const unnamed = createServiceAuthVerifier({ serviceDid: SERVICE_DID, plcUrl: 'http://plc.invalid', redis, replayKeyPrefix: prefix })
    for (let i = 0; i < 2; i++) await expect(unnamed.verify(`Bearer ${await token()}`, NSID)).rejects.toMatchObject({ code: 'ServiceUnavailable', status: 503 })
    await expect(verifier.verify(`Bearer ${await token()}`, NSID)).resolves.toMatchObject({ iss: did })
  })

  it('unknown did:plc → UnresolvableIssuer', async () => {
    const { keypair } = await generateDidKeyKeypair('ES256K')
    const token = await mintServiceJwt({ keypair, iss: randomPlcDid(), aud: SERVICE_DID, lxm: NSID })
    await expectCode(verifier.verify(`Bearer ${token}`, NSID), 'UnresolvableIssuer')
  })

  it('a did:web document over 16 KiB → UnresolvableIssuer (the host is the caller\'s choice)', async () => {
    const { keypair } = await generateDidKeyKeypair('ES256K')
    didWebDoc = { ...didDocument(didWebDid, keypair), padding: 'x'.repeat(17 * 1024) }
    const fresh = createServiceAuthVerifier({ serviceDid: SERVICE_DID, plcUrl, redis, replayKeyPrefix: prefix, allowInsecureDidWeb: true })
    const token = await mintServiceJwt({ keypair, iss: didWebDid, aud: SERVICE_DID, lxm: NSID })
    await expectCode(fresh.verify(`Bearer ${token}`, NSID), 'UnresolvableIssuer')
  })

  it('a did:plc document over 16 KiB → UnresolvableIssuer (what the directory serves for a DID is its owner\'s)', async () => {
    const { keypair } = await generateDidKeyKeypair('ES256K')
    const did = randomPlcDid()
    plcDocs.set(did, { ...didDocument(did, keypair), padding: 'x'.repeat(17 * 1024) })
    await expectCode(verifier.verify(`Bearer ${await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID })}`, NSID), 'UnresolvableIssuer')
    // a document within the bound is read
    plcDocs.set(did, { ...didDocument(did, keypair), padding: 'x'.repeat(15 * 1024) })
    const fresh = createServiceAuthVerifier({ serviceDid: SERVICE_DID, plcUrl, redis, replayKeyPrefix: prefix })
    await expect(fresh.verify(`Bearer ${await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID })}`, NSID)).resolves.toMatchObject({ iss: did })
  })

  it('keeps at most didCacheMax issuers\' documents: the least recently used is fetched again', async () => {
    const small = createServiceAuthVerifier({ serviceDid: SERVICE_DID, plcUrl, redis, replayKeyPrefix: prefix, didCacheMax: 2 })
    const issuers = await Promise.all(
      [0, 1, 2].map(async () => {
        const { keypair } = await generateDidKeyKeypair('ES256K')
        const did = randomPlcDid()
        plcDocs.set(did, didDocument(did, keypair))
        return { did, keypair }
      }),
    )
    const verifyAs = async ({ did, keypair }: (typeof issuers)[number]) =>
      small.verify(`Bearer ${await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID })}`, NSID)
    const asked = (did: string) => plcAsked.filter((d) => d === did).length
    await verifyAs(issuers[0]!)
    await verifyAs(issuers[0]!)
    expect(asked(issuers[0]!.did)).toBe(1)
    await verifyAs(issuers[1]!)
    await verifyAs(issuers[2]!)
    // the first issuer's document went to make room for the third's
    await verifyAs(issuers[0]!)
    expect(asked(issuers[0]!.did)).toBe(2)
    expect(asked(issuers[2]!.did)).toBe(1)
  })

  it('DID document without an #atproto key → UnresolvableIssuer', async () => {
    const { keypair } = await generateDidKeyKeypair('ES256K')
    const did = randomPlcDid()
    plcDocs.set(did, { ...didDocument(did, keypair), verificationMethod: [] })
    const token = await mintServiceJwt({ keypair, iss: did, aud: SERVICE_DID, lxm: NSID })
    await expectCode(verifier.verify(`Bearer ${token}`, NSID), 'UnresolvableIssuer')
  })
})
