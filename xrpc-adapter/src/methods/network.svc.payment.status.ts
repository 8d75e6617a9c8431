import { ContractError } from '@svc/errors'
import { graphql } from '@svc/graph'
import type { HandlerContext } from './types'

const PAYMENT_STATUS = graphql(`query PaymentStatus($token: String!) { paymentStatus(token: $token) { status ref { uri cid } } }`)

/** One indexed lookup in the payments subgraph by the token's hash; safe to poll. */
export async function status({ params, graph }: HandlerContext<'network.svc.payment.status'>) {
  if (params.token === undefined) throw new ContractError('MissingToken', 'the token parameter (app status token) is required')
  const { paymentStatus: p } = await graph(PAYMENT_STATUS, { token: params.token })
  return p.ref ? { status: p.status, ref: { uri: p.ref.uri, cid: p.ref.cid } } : { status: p.status }
}
