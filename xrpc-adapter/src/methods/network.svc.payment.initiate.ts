import { graphql } from '@svc/graph'
import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { renameErrors, type HandlerContext } from './types'
import { INPUT_KEYS } from '@svc/lexicons/types'

const INITIATE = graphql(`mutation Initiate($product: String!) { initiateCheckout(product: $product) { token url } }`)

/**
 * Body `product` only. The payments domain parses it, reads the facts it decides on itself (the app's environment
 * and fee rates, its approval by the recipient, the recipient's payout readiness), applies the rules (InvalidProduct,
 * AppUnauthorized, RecipientNotPayable) and the order-id idempotency.
 */
export async function initiate({ input, graph }: HandlerContext<'network.svc.payment.initiate'>) {
  assertOnlyKeys(input, INPUT_KEYS['network.svc.payment.initiate'], (field) => `the body carries product only; ${field} is not accepted`)
  // An app configured for test and live must name the environment in the product: that is the product's fault.
  const { initiateCheckout: c } = await graph(INITIATE, { product: input.product }).catch(
    renameErrors({ ...APP_ACCESS_ERRORS, InvalidRequest: 'InvalidProduct' }),
  )
  return { token: c.token, url: c.url }
}
