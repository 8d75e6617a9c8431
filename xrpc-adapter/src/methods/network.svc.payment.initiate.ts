import { assertOnlyKeys } from './strict-body'
import { APP_ACCESS_ERRORS } from './app-access'
import { graphql } from '@svc/graph'
import { gatewayMethod } from './types'

/**
 * Body `product` only. The payments domain parses it, reads the facts it decides on itself (the app's environment
 * and fee rates, its approval by the recipient, the recipient's payout readiness), applies the rules (InvalidProduct,
 * AppUnauthorized, RecipientNotPayable) and the order-id idempotency.
 */
export const initiate = gatewayMethod({
  nsid: 'network.svc.payment.initiate',
  auth: 'app',
  check: (call) => assertOnlyKeys(call.input, { product: true }, (field) => `the body carries product only; ${field} is not accepted`),
  operation: graphql(`mutation Initiate($product: String!) { initiateCheckout(product: $product) { token url } }`),
  variables: ({ input }) => ({ product: input.product }),
  output: ({ initiateCheckout: c }) => ({ token: c.token, url: c.url }),
  // An app configured for test and live must name the environment in the product: that is the product's fault.
  errors: { ...APP_ACCESS_ERRORS, InvalidRequest: 'InvalidProduct' },
})
