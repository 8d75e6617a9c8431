import { ContractError } from '@svc/errors'
import { graphql } from '@svc/graph'
import { APP_ACCESS_ERRORS } from './app-access'
import { renameErrors, type HandlerContext } from './types'

const GET_PAYOUT_STATUS = graphql(`query GetPayoutStatus($environment: String, $actor: String) {
  appAccess(environment: $environment) { payoutStatus(actor: $actor) { actor payable status } }
}`)

/**
 * One gateway request: the apps subgraph checks the calling app and resolves the environment (appAccess), then
 * the actors subgraph reads the actor in that environment. An app that is not registered, or not configured in
 * the environment, is AppUnauthorized here (the contract's name for it on this method).
 */
export async function getPayoutStatus({ params, graph }: HandlerContext<'money.svc.actor.getPayoutStatus'>) {
  if (params.actor === undefined) throw new ContractError('ActorRequired', 'the actor parameter (recipient DID) is required')
  const { appAccess } = await graph(GET_PAYOUT_STATUS, { environment: params.environment ?? null, actor: params.actor }).catch(
    renameErrors(APP_ACCESS_ERRORS),
  )
  const p = appAccess.payoutStatus
  return { actor: p.actor, payable: p.payable, status: p.status }
}
