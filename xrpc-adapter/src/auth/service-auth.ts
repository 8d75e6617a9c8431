/** App service-auth on /xrpc: the caller app's DID from a verified inter-service JWT. */
import type { ServiceAuthVerifier } from '@svc/service-auth'

export interface AppCaller {
  kind: 'app'
  appDid: string
}

export type AuthVerifier = (authorization: string | undefined, nsid: string) => Promise<AppCaller>

export function appServiceAuth(verifier: ServiceAuthVerifier): AuthVerifier {
  return async (authorization, nsid) => {
    const verified = await verifier.verify(authorization, nsid)
    return { kind: 'app', appDid: verified.iss }
  }
}
