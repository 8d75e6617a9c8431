/** Actors (payment recipients: creators and projects) as the API returns them, and their payout readiness. */
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'
import { PAYOUT_STATUSES, type ActorDoc, type ActorKind, type PayoutStatus } from '../models'
import type { ActorProfile, PayoutStatus as PayoutStatusType } from '../generated/graph-types'

/** The one rule: an actor can receive payments now exactly when its payout account is `ready`. */
export function isPayable(status: string): boolean {
  return status === 'ready'
}

export function parsePayoutStatus(value: unknown): PayoutStatus {
  if ((PAYOUT_STATUSES as readonly unknown[]).includes(value)) return value as PayoutStatus
  throw new ContractError('InvalidRequest', `payout status must be one of ${PAYOUT_STATUSES.join(', ')}`)
}

/** The SDL's PayoutStatus, its status narrowed to the model's values. */
export type PayoutStatusView = Omit<PayoutStatusType, 'status'> & { status: PayoutStatus }

/** The SDL's ActorProfile with its values narrowed, and when the payout status last changed (operators' CLI). */
export type ActorView = Omit<ActorProfile, 'environment' | 'kind' | 'payoutStatus'> & {
  environment: Environment
  kind: ActorKind
  payoutStatus: PayoutStatus
  payoutUpdatedAt: string
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
