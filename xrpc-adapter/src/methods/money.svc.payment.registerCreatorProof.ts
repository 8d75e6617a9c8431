import { APP_ACCESS_ERRORS } from './app-access'
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
 * The payments domain reads whether the creator delegated proof registration to the app (its approval of the app is
 * current and enables public records) and decides the rest.
 */
export const registerCreatorProof: GatewayMethod<'money.svc.payment.registerCreatorProof', { registerCreatorProof: ProofData }> = {
  nsid: 'money.svc.payment.registerCreatorProof',
  auth: 'app',
  check: ({ input }) =>
    assertOnlyKeys(input, { environment: true, paymentUri: true, recipientDid: true, proofUri: true, proofCid: true }, (f) => `${f} is not accepted`),
  operation: `mutation RegisterCreatorProof($input: RegisterCreatorProofInput!) {
    registerCreatorProof(input: $input) { paymentUri proofUri proofCid status registeredAt }
  }`,
  variables: ({ input }) => ({ input }),
  output: ({ registerCreatorProof: p }) => ({ ...p }),
  errors: APP_ACCESS_ERRORS,
}
