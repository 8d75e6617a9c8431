import { APP_ACCESS_ERRORS, environmentOf } from './app-access'
import { assertOnlyKeys } from './strict-body'
import type { GatewayMethod } from './types'

interface ApprovalData {
  id: string
  status: string
  dashboardUrl: string
  onboardingUrl: string
  paymentTypes: string[]
  feeShareBps: number
}

/**
 * The precheck resolves the environment and proves the recipient is a known actor there (the actors domain's
 * fact); the apps subgraph then creates or updates the one request of this app, recipient and environment.
 */
export const requestRecipientApproval: GatewayMethod<
  { requestRecipientApproval: ApprovalData },
  { appAccess: { environment: string; recipient: { did: string } } }
> = {
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
  precheck: {
    operation: `query RecipientApprovalPrecheck($environment: String, $recipient: String!) {
      appAccess(environment: $environment) { environment recipient: profile(actor: $recipient) { did } }
    }`,
    variables: ({ input }) => ({ environment: environmentOf(input.environment), recipient: input.recipientDid }),
  },
  operation: `mutation RequestRecipientApproval($input: RecipientApprovalInput!) {
    requestRecipientApproval(input: $input) { id status dashboardUrl onboardingUrl paymentTypes feeShareBps }
  }`,
  variables: ({ input }, pre) => ({ input: { ...input, environment: pre.appAccess.environment } }),
  output: ({ requestRecipientApproval: a }) => ({
    id: a.id,
    status: a.status,
    dashboardUrl: a.dashboardUrl,
    onboardingUrl: a.onboardingUrl,
    paymentTypes: a.paymentTypes,
    feeShareBps: a.feeShareBps,
  }),
  errors: { ...APP_ACCESS_ERRORS, ActorNotFound: 'RecipientNotFound' },
}
