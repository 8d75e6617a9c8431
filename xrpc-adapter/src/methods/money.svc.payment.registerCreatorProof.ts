import { graphql } from '@svc/graph'
import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { renameErrors, type HandlerContext } from './types'
import { INPUT_KEYS } from '@svc/lexicons/types'

const REGISTER_CREATOR_PROOF = graphql(`mutation RegisterCreatorProof($input: RegisterCreatorProofInput!) {
  registerCreatorProof(input: $input) { paymentUri proofUri proofCid status registeredAt }
}`)

/**
 * The payments domain reads whether the creator delegated proof registration to the app (its approval of the app is
 * current and enables public records) and decides the rest.
 */
export async function registerCreatorProof({ input, graph }: HandlerContext<'money.svc.payment.registerCreatorProof'>) {
  assertOnlyKeys(input, INPUT_KEYS['money.svc.payment.registerCreatorProof'], (f) => `${f} is not accepted`)
  const { registerCreatorProof: p } = await graph(REGISTER_CREATOR_PROOF, { input }).catch(renameErrors(APP_ACCESS_ERRORS))
  return { paymentUri: p.paymentUri, proofUri: p.proofUri, proofCid: p.proofCid, status: p.status, registeredAt: p.registeredAt }
}
