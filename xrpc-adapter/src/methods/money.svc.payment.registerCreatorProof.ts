import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { graphql } from '@svc/graph'
import { gatewayMethod } from './types'

/**
 * The payments domain reads whether the creator delegated proof registration to the app (its approval of the app is
 * current and enables public records) and decides the rest.
 */
export const registerCreatorProof = gatewayMethod({
  nsid: 'money.svc.payment.registerCreatorProof',
  auth: 'app',
  check: ({ input }) =>
    assertOnlyKeys(input, { environment: true, paymentUri: true, recipientDid: true, proofUri: true, proofCid: true }, (f) => `${f} is not accepted`),
  operation: graphql(`mutation RegisterCreatorProof($input: RegisterCreatorProofInput!) {
    registerCreatorProof(input: $input) { paymentUri proofUri proofCid status registeredAt }
  }`),
  variables: ({ input }) => ({ input }),
  output: ({ registerCreatorProof: p }) => ({ ...p }),
  errors: APP_ACCESS_ERRORS,
})
