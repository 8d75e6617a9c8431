import { graphql } from '@svc/graph'
import { APP_ACCESS_ERRORS } from './app-access'
import { renameErrors, type HandlerContext } from './types'

const GET_PROFILE = graphql(`query GetProfile($environment: String, $actor: String!) {
  appAccess(environment: $environment) { profile(actor: $actor) { did displayName payable paymentTypes createdAt } }
}`)

/** Same path as getPayoutStatus (appAccess, then the actors subgraph); the shape is this implementation's own (lexicon). */
export async function getProfile({ params, graph }: HandlerContext<'money.svc.actor.getProfile'>) {
  const { appAccess } = await graph(GET_PROFILE, { environment: params.environment ?? null, actor: params.actor }).catch(renameErrors(APP_ACCESS_ERRORS))
  const p = appAccess.profile
  return {
    did: p.did,
    ...(p.displayName ? { displayName: p.displayName } : {}),
    payable: p.payable,
    paymentTypes: p.paymentTypes,
    createdAt: p.createdAt,
  }
}
