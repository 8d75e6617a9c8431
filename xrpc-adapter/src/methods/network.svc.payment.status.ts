import { ContractError } from '@svc/errors'
import { graphql } from '@svc/graph'
import { gatewayMethod } from './types'

/** One indexed lookup in the payments subgraph by the token's hash; safe to poll. */
export const status = gatewayMethod({
  nsid: 'network.svc.payment.status',
  auth: 'app',
  check: ({ params }) => {
    if (params.token === undefined || params.token === '') throw new ContractError('MissingToken', 'the token parameter (app status token) is required')
  },
  operation: graphql(`query PaymentStatus($token: String!) { paymentStatus(token: $token) { status ref { uri cid } } }`),
  variables: ({ params }) => ({ token: params.token ?? '' }), // check() refused an absent token
  output: ({ paymentStatus: p }) => (p.ref ? { status: p.status, ref: { uri: p.ref.uri, cid: p.ref.cid } } : { status: p.status }),
})
