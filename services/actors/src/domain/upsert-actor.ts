/** The operator creates or updates an actor (npm run operator:actors -- create-creator). */
import { ContractError } from '@svc/errors'
import { isDid, parseDisplayName, parseEnvironment } from '@svc/vocabulary'
import { ACTOR_KINDS, PAYMENT_TYPES, isDuplicateKeyError } from '../models'
import { inActorTurn } from './actor-turns'
import type { ActorsDomain } from './context'
import { parsePayoutStatus, toActorView, type ActorView } from './views'

export interface UpsertActorInput {
  did: string
  environment: string
  kind?: string
  displayName?: string | null
  paymentTypes?: string[]
  payoutStatus?: string
}

/**
 * Creates the actor of a DID in an environment, or updates the fields given of an existing one. Defaults on
 * creation: kind creator, paymentTypes tip and shop, payout status onboarding-required. Concurrent creations
 * of the same DID and environment meet the unique index; the loser retries as an update. Every write of the actor
 * takes its turn (actor-turns.ts).
 */
export async function upsertActor(d: ActorsDomain, input: UpsertActorInput): Promise<ActorView> {
  if (!isDid(input.did)) throw new ContractError('InvalidRequest', 'did must be a DID')
  const environment = parseEnvironment(input.environment)
  const set: Record<string, unknown> = {}
  if (input.kind !== undefined) {
    if (!(ACTOR_KINDS as readonly string[]).includes(input.kind)) throw new ContractError('InvalidRequest', `kind must be one of ${ACTOR_KINDS.join(', ')}`)
    set.kind = input.kind
  }
  // shown to buyers on the checkout page
  const displayName = parseDisplayName(input.displayName, 'displayName')
  if (displayName !== undefined) set.displayName = displayName
  if (input.paymentTypes !== undefined) {
    const types = [...new Set(input.paymentTypes)]
    if (types.length === 0 || types.some((t) => !(PAYMENT_TYPES as readonly string[]).includes(t))) {
      throw new ContractError('InvalidRequest', `paymentTypes must be among ${PAYMENT_TYPES.join(', ')}`)
    }
    set.paymentTypes = types
  }
  const now = new Date()
  if (input.payoutStatus !== undefined) {
    set['payoutAccount.status'] = parsePayoutStatus(input.payoutStatus)
    set['payoutAccount.updatedAt'] = now
  }
  const defaults: Record<string, unknown> = {
    kind: 'creator',
    displayName: null,
    paymentTypes: [...PAYMENT_TYPES],
    'payoutAccount.status': 'onboarding-required',
    'payoutAccount.updatedAt': now,
  }
  const setOnInsert: Record<string, unknown> = { did: input.did, environment }
  for (const [k, v] of Object.entries(defaults)) if (!(k in set)) setOnInsert[k] = v
  return inActorTurn(d, input.did, environment, async () => {
    for (let attempt = 1; ; attempt++) {
      try {
        const doc = await d.models.Actor.findOneAndUpdate(
          { did: input.did, environment },
          { $set: set, $setOnInsert: setOnInsert },
          { upsert: true, returnDocument: 'after', lean: true, setDefaultsOnInsert: false },
        )
        if (!doc) throw new Error('actor upsert returned nothing')
        return toActorView(doc)
      } catch (err) {
        if (isDuplicateKeyError(err) && attempt < 3) continue
        throw err
      }
    }
  })
}
