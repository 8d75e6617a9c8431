/**
 * The service's DID document on {base_url} for a did:web SERVICE_DID: `#atproto` as a Multikey of
 * SERVICE_SIGNING_KEY, at the did:web method's path; none for another DID method. Proven end to end: a service-auth
 * verifier (what an app's XRPC receiver runs) resolves the document over HTTP and accepts a JWT the service signed.
 */
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import Redis from 'ioredis'
import { createServiceAuthVerifier, keypairFromPrivateKeyHex, mintServiceJwt } from '@svc/service-auth'
import { freePort, isolate } from '@svc/testing'
import { createGatewayClient } from '@svc/gateway-client'
import { buildApiServer, didWebDocumentPath, type ServiceIdentity } from '../src'
import { bareServerDeps } from './helpers'

const signingKeyHex = randomBytes(32).toString('hex')
const servers: FastifyInstance[] = []
const gateway = createGatewayClient({ url: 'http://127.0.0.1:1/graphql', signer: { issuer: 'xrpc-adapter', key: 'unused' } })

async function apiServer(identity?: ServiceIdentity): Promise<FastifyInstance> {
  const app = await buildApiServer(bareServerDeps(gateway, { serviceIdentity: identity }))
  servers.push(app)
  return app
}

afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()))
  await gateway.close()
})

it('a did:web of a host is served at /.well-known (the configuration takes no did:web path)', () => {
  expect(didWebDocumentPath('did:web:svc.example.com')).toBe('/.well-known/did.json')
  expect(didWebDocumentPath('did:web:localhost%3A4000')).toBe('/.well-known/did.json')
  expect(didWebDocumentPath('did:web:example.com:services:svc')).toBeNull()
  expect(didWebDocumentPath('did:plc:abc')).toBeNull()
  expect(didWebDocumentPath('did:key:zQ3sh')).toBeNull()
})

it('serves the document with #atproto as the Multikey of the signing key', async () => {
  const did = 'did:web:svc.example.com'
  const app = await apiServer({ did, signingKeyHex })
  const res = await app.inject({ method: 'GET', url: '/.well-known/did.json' })
  expect(res.statusCode).toBe(200)
  expect(res.headers['content-type']).toMatch(/^application\/json/)
  const multibase = (await keypairFromPrivateKeyHex(signingKeyHex, 'ES256K')).did().replace('did:key:', '')
  expect(res.json()).toEqual({
    '@context': ['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/multikey/v1'],
    id: did,
    verificationMethod: [{ id: `${did}#atproto`, type: 'Multikey', controller: did, publicKeyMultibase: multibase }],
  })
  expect(JSON.stringify(res.json())).not.toContain(signingKeyHex)
})

it('serves nothing for a did that is not did:web, or without an identity', async () => {
  for (const app of [await apiServer({ did: 'did:plc:abcdefghijklmnop', signingKeyHex }), await apiServer()]) {
    expect((await app.inject({ method: 'GET', url: '/.well-known/did.json' })).statusCode).toBe(404)
  }
})

it("an app's service-auth verifier resolves it and accepts the service's JWT", async () => {
  const port = await freePort()
  const did = `did:web:127.0.0.1%3A${port}`
  const app = await apiServer({ did, signingKeyHex })
  await app.listen({ host: '127.0.0.1', port })
  const iso = isolate('did-document')
  const redis = new Redis(iso.redisUrl)
  try {
    const appDid = 'did:web:receiver.example.com'
    const verifier = createServiceAuthVerifier({ serviceDid: appDid, plcUrl: 'http://127.0.0.1:1', redis, replayKeyPrefix: `${iso.redisPrefix}jti:`, allowInsecureDidWeb: true })
    const keypair = await keypairFromPrivateKeyHex(signingKeyHex, 'ES256K')
    const jwt = await mintServiceJwt({ keypair, iss: did, aud: appDid, lxm: 'money.svc.event.receiveEvent' })
    const verified = await verifier.verify(`Bearer ${jwt}`, 'money.svc.event.receiveEvent')
    expect(verified.iss).toBe(did)
    // another key claiming the same DID is refused
    const forged = await mintServiceJwt({ keypair: await keypairFromPrivateKeyHex(randomBytes(32).toString('hex'), 'ES256K'), iss: did, aud: appDid, lxm: 'money.svc.event.receiveEvent' })
    await expect(verifier.verify(`Bearer ${forged}`, 'money.svc.event.receiveEvent')).rejects.toMatchObject({ code: 'BadJwtSignature' })
  } finally {
    const keys = await redis.keys(`${iso.redisPrefix}*`)
    if (keys.length) await redis.del(...keys)
    redis.disconnect()
  }
})
