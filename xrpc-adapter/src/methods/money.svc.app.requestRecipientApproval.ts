import { graphql } from '@svc/graph'
import { INPUT_KEYS } from '@svc/lexicons/types'
import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { renameErrors, type HandlerContext } from './types'

const REQUEST_RECIPIENT_APPROVAL = graphql(`mutation RequestRecipientApproval($input: RecipientApprovalInput!) {
  requestRecipientApproval(input: $input) { id status dashboardUrl onboardingUrl paymentTypes feeShareBps }
}`)

/**
 * The apps domain resolves the environment, reads whether the recipient is a known actor there (the actors domain's
 * fact), then creates or updates the one request of this app, recipient and environment.
 */
export async function requestRecipientApproval({ input, graph }: HandlerContext<'money.svc.app.requestRecipientApproval'>) {
  assertOnlyKeys(input, INPUT_KEYS['money.svc.app.requestRecipientApproval'], (field) => `${field} is not a field of an approval request`)
  const { requestRecipientApproval: a } = await graph(REQUEST_RECIPIENT_APPROVAL, { input }).catch(
    renameErrors({ ...APP_ACCESS_ERRORS, ActorNotFound: 'RecipientNotFound' }),
  )
  return { id: a.id, status: a.status, dashboardUrl: a.dashboardUrl, onboardingUrl: a.onboardingUrl, paymentTypes: a.paymentTypes, feeShareBps: a.feeShareBps }
}
