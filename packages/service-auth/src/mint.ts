/**
 * Minting AT Protocol inter-service JWTs and did:key keypairs: for tests, the app SDK and examples.
 * Production callers sign with the `#atproto` key of their own DID document.
 */
import { P256Keypair, Secp256k1Keypair, type Keypair } from '@atproto/crypto'
import { createServiceJwt } from '@atproto/xrpc-server'

export type ServiceJwtAlg = 'ES256K' | 'ES256'

export const SERVICE_JWT_ALGS: readonly ServiceJwtAlg[] = ['ES256K', 'ES256']

/** A keypair whose private key can be exported (see `generateDidKeyKeypair`). */
export type ExportableServiceKeypair = Secp256k1Keypair | P256Keypair

export interface MintServiceJwtParams {
  /** Signs the token; its `jwtAlg` (ES256K or ES256) becomes the header `alg`. */
  keypair: Keypair
  /** The caller's DID. */
  iss: string
  /** The DID of the service being called. */
  aud: string
  /** The NSID of the method being called. */
  lxm: string
  /** Seconds until `exp`; default 60. Verifiers refuse more than 300. */
  expiresInSeconds?: number
}

/** A signed service JWT with `iss`, `aud`, `lxm`, `iat`, `exp` and a random `jti` (no `Bearer ` prefix). */
export async function mintServiceJwt(params: MintServiceJwtParams): Promise<string> {
  const { keypair, iss, aud, lxm, expiresInSeconds = 60 } = params
  if (!Number.isFinite(expiresInSeconds)) throw new TypeError('expiresInSeconds must be a finite number')
  const iat = Math.floor(Date.now() / 1000)
  return createServiceJwt({ keypair, iss, aud, lxm, iat, exp: iat + Math.floor(expiresInSeconds) })
}

export interface DidKeyKeypair {
  /** `did:key:z…` of the public key: usable directly as an issuer DID. */
  did: string
  keypair: ExportableServiceKeypair
  /** The 32-byte private key, hex: import it back with `keypairFromPrivateKeyHex`. Keep it secret. */
  privateKeyHex: string
}

/** A fresh exportable keypair (ES256K = secp256k1, ES256 = P-256) and its did:key. */
export async function generateDidKeyKeypair(alg: ServiceJwtAlg): Promise<DidKeyKeypair> {
  const keypair = alg === 'ES256K' ? await Secp256k1Keypair.create({ exportable: true }) : await P256Keypair.create({ exportable: true })
  const privateKeyHex = Buffer.from(await keypair.export()).toString('hex')
  return { did: keypair.did(), keypair, privateKeyHex }
}

/** Imports a 32-byte hex private key (as `generateDidKeyKeypair` returns) as an exportable keypair. */
export async function keypairFromPrivateKeyHex(hex: string, alg: ServiceJwtAlg): Promise<ExportableServiceKeypair> {
  const clean = hex.trim().replace(/^0x/i, '')
  if (!/^[0-9a-fA-F]{64}$/.test(clean)) throw new TypeError('private key must be 32 bytes of hex')
  if (alg === 'ES256K') return Secp256k1Keypair.import(clean.toLowerCase(), { exportable: true })
  if (alg === 'ES256') return P256Keypair.import(clean.toLowerCase(), { exportable: true })
  throw new TypeError(`unsupported alg: ${String(alg)}`)
}
