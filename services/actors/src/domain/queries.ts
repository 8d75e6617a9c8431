/** Reads of actors: getProfile, getPayoutStatus, and the references other subgraphs hand out. */
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'
import type { ActorsDomain } from './context'
import { toActorView, type ActorView, type PayoutStatusView } from './views'

/** ActorRequired when no actor DID is given; ActorNotFound when the DID has no actor in that environment. */
export async function findActor(d: ActorsDomain, environment: Environment, actor: string | null | undefined): Promise<ActorView> {
  if (!actor) throw new ContractError('ActorRequired', 'the actor parameter (recipient DID) is required')
  const doc = await d.models.Actor.findOne({ did: actor, environment }).lean()
  if (!doc) throw new ContractError('ActorNotFound', `actor ${actor} is unknown in ${environment}`)
  return toActorView(doc)
}

export async function getPayoutStatus(d: ActorsDomain, environment: Environment, actor: string | null | undefined): Promise<PayoutStatusView> {
  const view = await findActor(d, environment, actor)
  return { actor: view.did, payable: view.payable, status: view.payoutStatus }
}

/** The actor of a DID in an environment, or null when it has none there (an entity reference may point at nobody). */
export async function lookupActor(d: ActorsDomain, did: string, environment: Environment): Promise<ActorView | null> {
  const doc = await d.models.Actor.findOne({ did, environment }).lean()
  return doc ? toActorView(doc) : null
}
