import { ContractError } from '@svc/errors'
import { APP_ACCESS_ERRORS, environmentOf } from './app-access'
import type { GatewayMethod } from './types'

interface ConnectionData {
  id: string
  status: string
  recipientDid: string
  environment: string
  paymentTypes: string[]
  feeShareBps: number
  approvedAt: string | null
  recipient: { payoutStatus: string } | null
}

/**
 * Payment setup of an approved connection, from the creator's payout status: `ready` only when the payout account
 * is ready; `restricted` when the processor restricted it; otherwise `incomplete` (onboarding or verification
 * pending). An unapproved request is `not-checked`: approval and payment readiness are separate facts.
 */
export function paymentSetupOf(status: string, payoutStatus: string | undefined): string {
  if (status !== 'approved') return 'not-checked'
  if (payoutStatus === 'ready') return 'ready'
  if (payoutStatus === 'restricted') return 'restricted'
  return 'incomplete'
}

/** Read-only: one gateway read of the app's request (apps) and the recipient's payout status (actors). */
export const getRecipientApproval: GatewayMethod<{ appAccess: { recipientApproval: ConnectionData | null } }> = {
  nsid: 'money.svc.app.getRecipientApproval',
  auth: 'app',
  operation: `query GetRecipientApproval($environment: String, $recipientDid: String!) {
    appAccess(environment: $environment) {
      recipientApproval(recipientDid: $recipientDid) {
        id status recipientDid environment paymentTypes feeShareBps approvedAt recipient { payoutStatus }
      }
    }
  }`,
  variables: ({ params }) => ({ environment: environmentOf(params.environment), recipientDid: params.recipientDid }),
  output: ({ appAccess: { recipientApproval: a } }, { params }) => {
    if (!a) throw new ContractError('NotFound', `no approval request of this app for ${String(params.recipientDid)}`)
    return {
      status: a.status,
      paymentSetup: paymentSetupOf(a.status, a.recipient?.payoutStatus),
      id: a.id,
      recipientDid: a.recipientDid,
      environment: a.environment,
      paymentTypes: a.paymentTypes,
      feeShareBps: a.feeShareBps,
      ...(a.approvedAt ? { approvedAt: a.approvedAt } : {}),
    }
  },
  errors: APP_ACCESS_ERRORS,
}
