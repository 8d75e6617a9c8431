/**
 * One write of an actor at a time: the operator's create-creator and set-payout-status and the creator's test payout
 * onboarding each write in the actor's turn (`actor_turns`). On FerretDB two overlapping updates of one document keep
 * only one of them (docs/decisions.md): an operator fixing a display name could put back the payout status the
 * creator had just completed, or a status set to restricted could come back as ready.
 */
import { inTurn } from '@svc/subgraph-server'
import type { Environment } from '@svc/vocabulary'
import type { ActorsDomain } from './context'

export function inActorTurn<T>(d: ActorsDomain, did: string, environment: Environment, write: () => Promise<T>): Promise<T> {
  return inTurn(d.models.ActorTurn, `${environment} ${did}`, write, { logger: d.logger, busyMessage: 'another change of this actor is in progress; retry' })
}
