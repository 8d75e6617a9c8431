/**
 * Actors (payment recipients: creators and projects) and their payout readiness, per environment.
 * Reads answer getPayoutStatus / getProfile; writes are the operator's (and, later, payout onboarding's).
 */
import { ContractError } from '@svc/errors'
import {
  ACTOR_KINDS,
  PAYMENT_TYPES,
  PAYOUT_STATUSES,
  isDuplicateKeyError,
  type ActorDoc,
  type ActorKind,
  type ActorsModels,
  type PayoutStatus,
} from '../models'
import { isDid, isWithinBounds, parseEnvironment, type Environment } from '@svc/vocabulary'


/** The one rule: an actor can receive payments now exactly when its payout account is `ready`. */
export function isPayable(status: string): boolean {
  return status === 'ready'
}

export interface PayoutStatusView {
  actor: string
  payable: boolean
  status: PayoutStatus
}

export interface ActorView {
  did: string
  environment: Environment
  kind: ActorKind
  displayName: string | null
  paymentTypes: string[]
  payable: boolean
  payoutStatus: PayoutStatus
  payoutUpdatedAt: string
  createdAt: string
}

type StoredActor = ActorDoc & { createdAt?: Date; updatedAt?: Date }

export function toActorView(doc: StoredActor): ActorView {
  const status = (doc.payoutAccount?.status ?? 'onboarding-required') as PayoutStatus
  return {
    did: doc.did,
    environment: doc.environment as Environment,
    kind: doc.kind as ActorKind,
    displayName: doc.displayName ?? null,
    paymentTypes: [...(doc.paymentTypes ?? [])],
    payable: isPayable(status),
    payoutStatus: status,
    payoutUpdatedAt: (doc.payoutAccount?.updatedAt ?? new Date(0)).toISOString(),
    createdAt: (doc.createdAt ?? new Date(0)).toISOString(),
  }
}

/** ActorRequired when no actor DID is given; ActorNotFound when the DID has no actor in that environment. */
export async function findActor(models: ActorsModels, environment: Environment, actor: string | null | undefined): Promise<ActorView> {
  if (!actor) throw new ContractError('ActorRequired', 'the actor parameter (recipient DID) is required')
  const doc = await models.Actor.findOne({ did: actor, environment }).lean()
  if (!doc) throw new ContractError('ActorNotFound', `actor ${actor} is unknown in ${environment}`)
  return toActorView(doc)
}

export async function getPayoutStatus(models: ActorsModels, environment: Environment, actor: string | null | undefined): Promise<PayoutStatusView> {
  const view = await findActor(models, environment, actor)
  return { actor: view.did, payable: view.payable, status: view.payoutStatus }
}

export function parsePayoutStatus(value: unknown): PayoutStatus {
  if ((PAYOUT_STATUSES as readonly unknown[]).includes(value)) return value as PayoutStatus
  throw new ContractError('InvalidRequest', `payout status must be one of ${PAYOUT_STATUSES.join(', ')}`)
}

export interface UpsertActorInput {
  did: string
  environment: string
  kind?: string
  displayName?: string | null
  paymentTypes?: string[]
  payoutStatus?: string
}

function validDisplayName(value: string | null | undefined): string | null | undefined {
  if (value === undefined || value === null) return value
  const trimmed = value.trim()
  if (trimmed === '') return null
  if (!isWithinBounds(trimmed, { maxGraphemes: 64, maxBytes: 640 })) throw new ContractError('InvalidRequest', 'displayName must be at most 64 characters')
  return trimmed
}

/**
 * Creates the actor of a DID in an environment, or updates the fields given of an existing one. Defaults on
 * creation: kind creator, paymentTypes tip and shop, payout status onboarding-required. Concurrent creations
 * of the same DID and environment meet the unique index; the loser retries as an update.
 */
export async function upsertActor(models: ActorsModels, input: UpsertActorInput): Promise<ActorView> {
  if (!isDid(input.did)) throw new ContractError('InvalidRequest', 'did must be a DID')
  const environment = parseEnvironment(input.environment)
  const set: Record<string, unknown> = {}
  if (input.kind !== undefined) {
    if (!(ACTOR_KINDS as readonly string[]).includes(input.kind)) throw new ContractError('InvalidRequest', `kind must be one of ${ACTOR_KINDS.join(', ')}`)
    set.kind = input.kind
  }
  const displayName = validDisplayName(input.displayName)
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
  for (let attempt = 1; ; attempt++) {
    try {
      const doc = await models.Actor.findOneAndUpdate(
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
}

/** Changes the payout status of an existing actor (ActorNotFound otherwise). */
export async function setPayoutStatus(
  models: ActorsModels,
  input: { did: string; environment: string; status: string },
): Promise<ActorView> {
  const environment = parseEnvironment(input.environment)
  const status = parsePayoutStatus(input.status)
  const doc = await models.Actor.findOneAndUpdate(
    { did: input.did, environment },
    { $set: { 'payoutAccount.status': status, 'payoutAccount.updatedAt': new Date() } },
    { returnDocument: 'after', lean: true },
  )
  if (!doc) throw new ContractError('ActorNotFound', `actor ${input.did} is unknown in ${environment}`)
  return toActorView(doc)
}

/** The actor of a DID in an environment, or null when it has none there (an entity reference may point at nobody). */
export async function lookupActor(models: ActorsModels, did: string, environment: Environment): Promise<ActorView | null> {
  const doc = await models.Actor.findOne({ did, environment }).lean()
  return doc ? toActorView(doc) : null
}

/**
 * A creator completes payout onboarding from the dashboard. In test the built-in test processor verifies at once:
 * the payout account becomes `ready`. Live onboarding goes through the live processor, which is not configured
 * (NotAllowed). ActorNotFound when the creator has no actor in that environment.
 */
export async function completeTestPayoutOnboarding(models: ActorsModels, did: string, environment: Environment): Promise<ActorView> {
  if (environment !== 'test') {
    throw new ContractError('NotAllowed', 'payout onboarding in live goes through the live processor, which is not configured')
  }
  return setPayoutStatus(models, { did, environment, status: 'ready' })
}
