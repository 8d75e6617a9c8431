import { ContractError } from '@svc/errors'
import { graphql } from '@svc/graph'
import { APP_ACCESS_ERRORS } from './app-access'
import { renameErrors, type HandlerContext } from './types'

const GET_RECIPIENT_APPROVAL = graphql(`query GetRecipientApproval($environment: String, $recipientDid: String!) {
  appAccess(environment: $environment) {
    recipientApproval(recipientDid: $recipientDid) {
      id status recipientDid environment paymentTypes feeShareBps approvedAt paymentSetup
    }
  }
}`)

/** Read-only: one gateway read of the app's request and its payment setup (the apps domain decides it). */
export async function getRecipientApproval({ params, graph }: HandlerContext<'money.svc.app.getRecipientApproval'>) {
  const { appAccess } = await graph(GET_RECIPIENT_APPROVAL, { environment: params.environment ?? null, recipientDid: params.recipientDid }).catch(
    renameErrors(APP_ACCESS_ERRORS),
  )
  const a = appAccess.recipientApproval
  if (!a) throw new ContractError('NotFound', `no approval request of this app for ${params.recipientDid}`)
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
}
