/**
 * Collections owned by the actors subgraph: creators and projects (payment recipients) by DID, one document
 * per DID and environment (test and live are separate worlds), with the state of their payout account.
 * Actors are not per app: every app configured for an environment sees the same actors of that environment.
 */
import { Schema, type Connection, type InferSchemaType, type Model } from 'mongoose'
import { createTurnModel, type TurnModel } from '@svc/subgraph-server'
import { ENVIRONMENTS } from '@svc/vocabulary'

export const ACTOR_KINDS = ['creator', 'project'] as const
export type ActorKind = (typeof ACTOR_KINDS)[number]

/**
 * Payout account status (getPayoutStatus `status`); payable only when `ready`.
 *   ready                 the payout account can receive payments now
 *   onboarding-required   no payout account yet (the default): the creator must complete payout onboarding
 *   pending-verification  onboarding submitted, being verified by the processor: transient, apps retry later
 *   restricted            the processor restricted payouts: the creator must act in the dashboard
 */
export const PAYOUT_STATUSES = ['ready', 'onboarding-required', 'pending-verification', 'restricted'] as const
export type PayoutStatus = (typeof PAYOUT_STATUSES)[number]

export const PAYMENT_TYPES = ['tip', 'shop'] as const

const actorSchema = new Schema(
  {
    did: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    kind: { type: String, required: true, enum: ACTOR_KINDS, default: 'creator' },
    displayName: { type: String, default: null },
    paymentTypes: { type: [String], default: () => ['tip', 'shop'] },
    payoutAccount: {
      status: { type: String, required: true, enum: PAYOUT_STATUSES, default: 'onboarding-required' },
      updatedAt: { type: Date, required: true, default: () => new Date() },
    },
  },
  { timestamps: true, collection: 'actors' },
)
actorSchema.index({ did: 1, environment: 1 }, { unique: true })

export type ActorDoc = InferSchemaType<typeof actorSchema>

export interface ActorsModels {
  Actor: Model<ActorDoc>
  /** one write of an actor at a time (domain/actor-turns.ts) */
  ActorTurn: TurnModel
}

export async function createActorsModels(conn: Connection): Promise<ActorsModels> {
  const models: ActorsModels = { Actor: conn.model<ActorDoc>('Actor', actorSchema), ActorTurn: await createTurnModel(conn, 'ActorTurn', 'actor_turns') }
  await models.Actor.init()
  return models
}

/** Re-exported for this domain's code: the one check lives in the subgraph kit. */
export { isDuplicateKeyError } from '@svc/subgraph-server'
