/**
 * Whether a creator lets the app take a payment of a type from its buyers now (an app's own sale needs no one's
 * leave): the approval it rests on and the fee share it grants, or why not, as the contract's error and as a code.
 * Initiate refuses with the error; pay, up to a day later, reads it again and closes the checkout with the code.
 */
import { ContractError } from '@svc/errors'
import type { CheckoutFacts } from './app-facts'

export type Authorization =
  | { ok: true; approvalId: string; approvalRevision: number; recipientName: string | null; feeShareBps: number }
  | { ok: false; code: 'approval_ended' | 'payment_type_not_approved' | 'recipient_not_payable' | 'payment_type_not_accepted'; error: ContractError }

export function authorizationOf(facts: CheckoutFacts, recipientDid: string, paymentType: string): Authorization {
  const refused = (code: Extract<Authorization, { ok: false }>['code'], error: ContractError): Authorization => ({ ok: false, code, error })
  const approval = facts.approval
  if (!approval) return refused('approval_ended', new ContractError('AppUnauthorized', `recipient ${recipientDid} has not approved this app in ${facts.environment}`))
  if (approval.status !== 'approved') {
    return refused('approval_ended', new ContractError('AppUnauthorized', `this app's approval by recipient ${recipientDid} is ${approval.status}, not approved`))
  }
  if (!approval.paymentTypes.includes(paymentType)) {
    const approved = approval.paymentTypes.join(', ') || 'no'
    return refused('payment_type_not_approved', new ContractError('AppUnauthorized', `recipient ${recipientDid} approved this app for ${approved} payments, not ${paymentType}`))
  }
  const recipient = facts.recipient
  if (!recipient) return refused('recipient_not_payable', new ContractError('RecipientNotPayable', `recipient ${recipientDid} is unknown in ${facts.environment}`))
  if (!recipient.payable) {
    return refused('recipient_not_payable', new ContractError('RecipientNotPayable', `recipient ${recipientDid} cannot receive payments now (payout status ${recipient.payoutStatus})`))
  }
  // the profile's payment types (getProfile): an approval cannot take a type the recipient does not accept
  if (!recipient.paymentTypes.includes(paymentType)) {
    const accepted = recipient.paymentTypes.join(', ') || 'no'
    return refused('payment_type_not_accepted', new ContractError('RecipientNotPayable', `recipient ${recipientDid} accepts ${accepted} payments, not ${paymentType}`))
  }
  // the share the creator accepted, but never more than the app may take now (an operator may have lowered it)
  return { ok: true, approvalId: approval.id, approvalRevision: approval.revision, recipientName: recipient.displayName ?? null, feeShareBps: Math.min(approval.feeShareBps, facts.feeShareCapBps) }
}
