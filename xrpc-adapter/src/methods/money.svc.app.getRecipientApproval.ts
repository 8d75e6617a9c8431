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
  paymentSetup: string
}

/** Read-only: one gateway read of the app's request and its payment setup (the apps domain decides it). */
export const getRecipientApproval: GatewayMethod<'money.svc.app.getRecipientApproval', { appAccess: { recipientApproval: ConnectionData | null } }> = {
  nsid: 'money.svc.app.getRecipientApproval',
  auth: 'app',
  operation: `query GetRecipientApproval($environment: String, $recipientDid: String!) {
    appAccess(environment: $environment) {
      recipientApproval(recipientDid: $recipientDid) {
        id status recipientDid environment paymentTypes feeShareBps approvedAt paymentSetup
      }
    }
  }`,
  variables: ({ params }) => ({ environment: environmentOf(params.environment), recipientDid: params.recipientDid }),
  output: ({ appAccess: { recipientApproval: a } }, { params }) => {
    if (!a) throw new ContractError('NotFound', `no approval request of this app for ${String(params.recipientDid)}`)
    return {
      status: a.status,
      paymentSetup: a.paymentSetup,
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
