import { ContractError } from '@svc/errors'
import { graphql } from '@svc/graph'
import { APP_ACCESS_ERRORS } from './app-access'
import { renameErrors, type HandlerContext } from './types'

const PAYMENT_STATUS = graphql(`query PaymentStatus($token: String!) { paymentStatus(token: $token) { status ref { uri cid } failureReason } }`)

/** a token that names no payment, polled by a DID that is no app in its environment */
const appAccessErrors = renameErrors(APP_ACCESS_ERRORS)

/** One indexed lookup in the payments subgraph by the token's hash; safe to poll. */
export async function status({ params, graph }: HandlerContext<'network.svc.payment.status'>) {
  if (params.token === undefined) throw new ContractError('MissingToken', 'the token parameter (app status token) is required')
  const { paymentStatus: p } = await graph(PAYMENT_STATUS, { token: params.token }).catch(appAccessErrors)
  return { status: p.status, ...(p.ref ? { ref: { uri: p.ref.uri, cid: p.ref.cid } } : {}), ...(p.failureReason ? { failureReason: p.failureReason } : {}) }
}
