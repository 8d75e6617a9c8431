/** network.svc.payment.status: the app's poll of a checkout by its status token. */
import { ContractError } from '@svc/errors'
import { appUnauthorized } from './checkout-errors'
import { refString, type StoredCheckout } from './checkout-view'
import type { ServingPayments } from './context'
import { settleOnRead } from './settlement'
import { hashToken, tokenEnvironment } from './tokens'
import type { PaymentStatus as PaymentStatusView } from '../generated/graph-types'

export type { PaymentStatusView }

const STATUS_FIELDS = { _id: 1, appDid: 1, environment: 1, status: 1, expiresAt: 1, ref: 1, failureReason: 1 } as const

/**
 * One indexed lookup by the token's hash. `appDid` is the calling app (null for an operator, who may read any).
 * A pending checkout past its expiry is expired by this read, so polling always ends. A token that names no payment
 * is NotFound for an app that may poll in its environment, AppUnauthorized for a DID that is no app there (as every
 * payments method answers it); only that answer reads the apps domain.
 */
export async function getPaymentStatus(d: ServingPayments, input: { token: string | null | undefined; appDid: string | null }): Promise<PaymentStatusView> {
  const token = input.token
  if (token === undefined || token === null || token === '') throw new ContractError('MissingToken', 'the token parameter (app status token) is required')
  const environment = tokenEnvironment('status', token)
  if (!environment) throw new ContractError('InvalidToken', 'the token is not an app status token')
  const hash = hashToken(token)
  type StatusDoc = Pick<StoredCheckout, '_id' | 'appDid' | 'environment' | 'status' | 'expiresAt' | 'ref' | 'failureReason'>
  const load = () => d.models.Checkout.findOne({ statusTokenHash: hash }, STATUS_FIELDS).lean() as Promise<StatusDoc | null>
  const found = await load()
  if (!found) {
    if (input.appDid !== null) await d.facts.environment(input.appDid, environment)
    throw new ContractError('NotFound', 'no payment for this token')
  }
  if (input.appDid !== null && found.appDid !== input.appDid) appUnauthorized('this payment belongs to another app')
  const doc = await settleOnRead(d, found, load)
  return { status: doc.status, ref: refString(doc.ref), failureReason: doc.status === 'failed' ? doc.failureReason ?? null : null }
}
