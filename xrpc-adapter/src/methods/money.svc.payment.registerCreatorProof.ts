import { APP_ACCESS_ERRORS, environmentOf } from './app-access'
import { assertOnlyKeys } from './strict-body'
import type { GatewayMethod } from './types'

interface ProofData {
  paymentUri: string
  proofUri: string
  proofCid: string
  status: string
  registeredAt: string
}

/**
 * The creator delegated proof registration to the app when its approval of the app is current (`approved`) and
 * enables public records: the precheck reads that from the apps domain; the payments domain decides the rest.
 */
export const registerCreatorProof: GatewayMethod<
  { registerCreatorProof: ProofData },
  { appAccess: { environment: string; recipientApproval: { status: string; publicRecords: { enabled: boolean } } | null } }
> = {
  nsid: 'money.svc.payment.registerCreatorProof',
  auth: 'app',
  check: ({ input }) =>
    assertOnlyKeys(input, { environment: true, paymentUri: true, recipientDid: true, proofUri: true, proofCid: true }, (f) => `${f} is not accepted`),
  precheck: {
    operation: `query CreatorProofPrecheck($environment: String, $recipient: String!) {
      appAccess(environment: $environment) { environment recipientApproval(recipientDid: $recipient) { status publicRecords { enabled } } }
    }`,
    variables: ({ input }) => ({ environment: environmentOf(input.environment), recipient: input.recipientDid }),
  },
  operation: `mutation RegisterCreatorProof($input: RegisterCreatorProofInput!, $delegated: Boolean!) {
    registerCreatorProof(input: $input, delegated: $delegated) { paymentUri proofUri proofCid status registeredAt }
  }`,
  variables: ({ input }, { appAccess: a }) => ({
    input: { ...input, environment: a.environment },
    delegated: a.recipientApproval?.status === 'approved' && a.recipientApproval.publicRecords.enabled,
  }),
  output: ({ registerCreatorProof: p }) => ({ ...p }),
  errors: APP_ACCESS_ERRORS,
}
