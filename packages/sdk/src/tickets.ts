/**
 * Buyer and organizer assertions (the tickets methods): a JWT in the service-auth format, signed with the person's
 * own key, never the app's: `iss` = the buyer's or organizer's DID, `aud` = the service's DID, `lxm` = the method.
 * Where the person's key lives (their device, their PDS) is the app's design; this mints one from a keypair.
 */
import { mintServiceJwt } from '@svc/service-auth'
import type { MethodNsid } from '@svc/lexicons/types'
import { assertJwtLifetime, type SigningKeypair } from './client'

/** `expiresInSeconds`: 1 to 300 (the service refuses a longer-lived assertion), 60 by default. */
export async function mintAssertion(opts: { keypair: SigningKeypair; did: string; serviceDid: string; nsid: MethodNsid; expiresInSeconds?: number }): Promise<string> {
  assertJwtLifetime('expiresInSeconds', opts.expiresInSeconds)
  return mintServiceJwt({ keypair: opts.keypair, iss: opts.did, aud: opts.serviceDid, lxm: opts.nsid, expiresInSeconds: opts.expiresInSeconds })
}
