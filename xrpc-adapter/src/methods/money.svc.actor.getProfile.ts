import { APP_ACCESS_ERRORS } from './app-access'
import type { GatewayMethod } from './types'

interface ProfileData {
  did: string
  displayName: string | null
  payable: boolean
  paymentTypes: string[]
  createdAt: string
}

/** Same path as getPayoutStatus (appAccess, then the actors subgraph); the shape is this implementation's own (lexicon). */
export const getProfile: GatewayMethod<'money.svc.actor.getProfile', { appAccess: { profile: ProfileData } }> = {
  nsid: 'money.svc.actor.getProfile',
  auth: 'app',
  operation: `query GetProfile($environment: String, $actor: String!) {
    appAccess(environment: $environment) { profile(actor: $actor) { did displayName payable paymentTypes createdAt } }
  }`,
  variables: ({ params }) => ({ environment: params.environment ?? null, actor: params.actor }),
  output: ({ appAccess: { profile: p } }) => ({
    did: p.did,
    ...(p.displayName ? { displayName: p.displayName } : {}),
    payable: p.payable,
    paymentTypes: p.paymentTypes,
    createdAt: p.createdAt,
  }),
  errors: APP_ACCESS_ERRORS,
}
