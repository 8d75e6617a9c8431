import { APP_ACCESS_ERRORS } from './app-access'
import { ContractError } from '@svc/errors'
import { graphql } from '@svc/graph'
import { gatewayMethod } from './types'

/**
 * One gateway request: the apps subgraph checks the calling app and resolves the environment (appAccess), then
 * the actors subgraph reads the actor in that environment. An app that is not registered, or not configured in
 * the environment, is AppUnauthorized here (the contract's name for it on this method).
 */
export const getPayoutStatus = gatewayMethod({
  nsid: 'money.svc.actor.getPayoutStatus',
  auth: 'app',
  operation: graphql(`query GetPayoutStatus($environment: String, $actor: String) {
    appAccess(environment: $environment) { payoutStatus(actor: $actor) { actor payable status } }
  }`),
  check: ({ params }) => {
    if (params.actor === undefined || params.actor === '') {
      throw new ContractError('ActorRequired', 'the actor parameter (recipient DID) is required')
    }
  },
  variables: ({ params }) => ({ environment: params.environment ?? null, actor: params.actor }),
  output: ({ appAccess: { payoutStatus: p } }) => ({ actor: p.actor, payable: p.payable, status: p.status }),
  errors: APP_ACCESS_ERRORS,
})
