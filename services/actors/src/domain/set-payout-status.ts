/** The operator (and, later, payout onboarding) changes an actor's payout status. */
import { ContractError } from '@svc/errors'
import { parseEnvironment } from '@svc/vocabulary'
import { inActorTurn } from './actor-turns'
import type { ActorsDomain } from './context'
import { parsePayoutStatus, toActorView, type ActorView } from './views'

/** Changes the payout status of an existing actor (ActorNotFound otherwise). */
export async function setPayoutStatus(d: ActorsDomain, input: { did: string; environment: string; status: string }): Promise<ActorView> {
  const environment = parseEnvironment(input.environment)
  const status = parsePayoutStatus(input.status)
  const doc = await inActorTurn(d, input.did, environment, () =>
    d.models.Actor.findOneAndUpdate(
      { did: input.did, environment },
      { $set: { 'payoutAccount.status': status, 'payoutAccount.updatedAt': new Date() } },
      { returnDocument: 'after', lean: true },
    ),
  )
  if (!doc) throw new ContractError('ActorNotFound', `actor ${input.did} is unknown in ${environment}`)
  return toActorView(doc)
}
