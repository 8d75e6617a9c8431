import { APP_ACCESS_ERRORS } from './app-access'
import { graphql } from '@svc/graph'
import { gatewayMethod } from './types'

/** Same path as getPayoutStatus (appAccess, then the actors subgraph); the shape is this implementation's own (lexicon). */
export const getProfile = gatewayMethod({
  nsid: 'money.svc.actor.getProfile',
  auth: 'app',
  operation: graphql(`query GetProfile($environment: String, $actor: String!) {
    appAccess(environment: $environment) { profile(actor: $actor) { did displayName payable paymentTypes createdAt } }
  }`),
  variables: ({ params }) => ({ environment: params.environment ?? null, actor: params.actor }),
  output: ({ appAccess: { profile: p } }) => ({
    did: p.did,
    ...(p.displayName ? { displayName: p.displayName } : {}),
    payable: p.payable,
    paymentTypes: p.paymentTypes,
    createdAt: p.createdAt,
  }),
  errors: APP_ACCESS_ERRORS,
})
