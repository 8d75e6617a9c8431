import { ContractError } from '@svc/errors'
import { APP_ACCESS_ERRORS, environmentOf } from './app-access'
import { graphql } from '@svc/graph'
import { gatewayMethod } from './types'

/** Read-only: one gateway read of the app's request and its payment setup (the apps domain decides it). */
export const getRecipientApproval = gatewayMethod({
  nsid: 'money.svc.app.getRecipientApproval',
  auth: 'app',
  operation: graphql(`query GetRecipientApproval($environment: String, $recipientDid: String!) {
    appAccess(environment: $environment) {
      recipientApproval(recipientDid: $recipientDid) {
        id status recipientDid environment paymentTypes feeShareBps approvedAt paymentSetup
      }
    }
  }`),
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
})
