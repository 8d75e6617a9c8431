/**
 * The service's own DID document on {base_url} when SERVICE_DID is a did:web (docs/events.md, "Channels"): app
 * receivers of the XRPC channel resolve the issuer of our service-auth JWTs through it. One verification method,
 * `#atproto`, a Multikey of SERVICE_SIGNING_KEY (secp256k1). `did:web:host` is served at `/.well-known/did.json`,
 * `did:web:host:a:b` at `/a/b/did.json` (the did:web method's rule).
 */
import type { FastifyInstance } from 'fastify'
import { keypairFromPrivateKeyHex } from '@svc/service-auth'

export interface ServiceIdentity {
  /** SERVICE_DID */
  did: string
  /** SERVICE_SIGNING_KEY: hex secp256k1 private key */
  signingKeyHex: string
}

/** Where a did:web's document is served, or null for another DID method. */
export function didWebDocumentPath(did: string): string | null {
  const m = /^did:web:([^:]+)((?::[^:]+)*)$/.exec(did)
  if (!m) return null
  const segments = (m[2] ?? '').split(':').filter(Boolean).map(decodeURIComponent)
  return segments.length ? `/${segments.map(encodeURIComponent).join('/')}/did.json` : '/.well-known/did.json'
}

export async function didDocument(identity: ServiceIdentity) {
  const keypair = await keypairFromPrivateKeyHex(identity.signingKeyHex, 'ES256K')
  const publicKeyMultibase = keypair.did().replace(/^did:key:/, '')
  return {
    '@context': ['https://www.w3.org/ns/did/v1', 'https://w3id.org/security/multikey/v1'],
    id: identity.did,
    verificationMethod: [{ id: `${identity.did}#atproto`, type: 'Multikey', controller: identity.did, publicKeyMultibase }],
  }
}

/** Registers the document's route when the identity is a did:web; nothing otherwise. */
export async function didDocumentRoute(app: FastifyInstance, opts: { identity?: ServiceIdentity }) {
  const path = opts.identity ? didWebDocumentPath(opts.identity.did) : null
  if (!opts.identity || !path) return
  const document = await didDocument(opts.identity)
  app.get(path, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300')
    return document
  })
}
