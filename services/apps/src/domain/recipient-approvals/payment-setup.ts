/**
 * Payment setup of an approval (money.svc.app.getRecipientApproval `paymentSetup`): approval and payment readiness
 * are separate facts, so an approval that is not `approved` is `not-checked`; an approved one is `ready` only when
 * the recipient's payout account is ready (the actors domain's fact), `restricted` when the processor restricted it,
 * otherwise `incomplete` (onboarding or verification pending, or no actor yet).
 */
import type { ServingApps } from '../context'
import type { RecipientApprovalView } from './views'

export type PaymentSetup = 'not-checked' | 'ready' | 'restricted' | 'incomplete'

export async function paymentSetupOf(d: Pick<ServingApps, 'facts'>, approval: RecipientApprovalView): Promise<PaymentSetup> {
  if (approval.status !== 'approved') return 'not-checked'
  const actor = await d.facts.actor(approval.recipientDid, approval.environment)
  if (actor?.payoutStatus === 'ready') return 'ready'
  if (actor?.payoutStatus === 'restricted') return 'restricted'
  return 'incomplete'
}
