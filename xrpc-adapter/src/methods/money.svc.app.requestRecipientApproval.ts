import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { graphql } from '@svc/graph'
import { gatewayMethod } from './types'

/**
 * The apps domain resolves the environment, reads whether the recipient is a known actor there (the actors domain's
 * fact), then creates or updates the one request of this app, recipient and environment.
 */
export const requestRecipientApproval = gatewayMethod({
  nsid: 'money.svc.app.requestRecipientApproval',
  auth: 'app',
  check: ({ input }) =>
    assertOnlyKeys(
      input,
      {
        recipientDid: true,
        environment: true,
        paymentTypes: true,
        feeShareBps: true,
        publicRecords: { enabled: true, defaults: { attestation: true } },
        requestReason: true,
        setupReturnUrl: true,
      },
      (field) => `${field} is not a field of an approval request`,
    ),
  operation: graphql(`mutation RequestRecipientApproval($input: RecipientApprovalInput!) {
    requestRecipientApproval(input: $input) { id status dashboardUrl onboardingUrl paymentTypes feeShareBps }
  }`),
  variables: ({ input }) => ({ input }),
  output: ({ requestRecipientApproval: a }) => ({
    id: a.id,
    status: a.status,
    dashboardUrl: a.dashboardUrl,
    onboardingUrl: a.onboardingUrl,
    paymentTypes: a.paymentTypes,
    feeShareBps: a.feeShareBps,
  }),
  errors: { ...APP_ACCESS_ERRORS, ActorNotFound: 'RecipientNotFound' },
})
