/**
 * The service's own DID document on {base_url} when SERVICE_DID is a did:web (docs/events.md, "Channels"): app
 * receivers of the XRPC channel resolve the issuer of our service-auth JWTs through it. One verification method,
 * `#atproto`, a Multikey of SERVICE_SIGNING_KEY (secp256k1), at `/.well-known/did.json` (SERVICE_DID is a did:web of a
 * host alone: atproto's resolvers, and so app receivers, resolve no did:web path).
 */
import type { FastifyInstance } from 'fastify'
import { keypairFromPrivateKeyHex } from '@svc/service-auth'

export interface ServiceIdentity {
  /** SERVICE_DID */
  did: string
  /** SERVICE_SIGNING_KEY: hex secp256k1 private key */
  signingKeyHex: string
}

/** Where a did:web's document is served, or null for another DID method (SERVICE_DID is a did:web of a host alone). */
export function didWebDocumentPath(did: string): string | null {
  return /^did:web:[^:]+$/.test(did) ? '/.well-known/did.json' : null
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
