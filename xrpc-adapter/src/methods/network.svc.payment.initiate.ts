import { ContractError } from '@svc/errors'
import { parseProduct, type CheckoutProduct } from '@svc/checkout-product'
import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import type { GatewayMethod, MethodCall } from './types'

interface InitiatePrecheck {
  appAccess: {
    environment: string
    config: { ticketFee: { bps: number; flatAmount: number; flatCurrency: string; passToBuyer: boolean } }
    recipientApproval: {
      id: string
      status: string
      paymentTypes: string[]
      feeShareBps: number
      recipient: { did: string; displayName: string | null; payable: boolean; payoutStatus: string } | null
    } | null
  }
}

/** The product, strictly parsed; the payments subgraph parses it again and decides (this only routes the precheck). */
function productOf(call: MethodCall): CheckoutProduct {
  const parsed = parseProduct(call.input.product)
  if (!parsed.ok) throw new ContractError('InvalidProduct', `invalid checkout product: ${parsed.reason}`)
  return parsed.product
}

/**
 * Body `product` only. The precheck gathers the facts the payments domain decides on: the environment (the
 * product's, else the app's only configured one), the app's platform fee rates there, its approval by the
 * recipient and the recipient's payout readiness. The payments subgraph then applies the rules (InvalidProduct,
 * AppUnauthorized, RecipientNotPayable) and the order-id idempotency.
 */
export const initiate: GatewayMethod<{ initiateCheckout: { token: string; url: string } }, InitiatePrecheck> = {
  nsid: 'network.svc.payment.initiate',
  auth: 'app',
  check: (call) => {
    assertOnlyKeys(call.input, { product: true }, (field) => `the body carries product only; ${field} is not accepted`)
    productOf(call)
  },
  precheck: {
    operation: `query InitiatePrecheck($environment: String, $recipient: String!) {
      appAccess(environment: $environment) {
        environment
        config { ticketFee { bps flatAmount flatCurrency passToBuyer } }
        recipientApproval(recipientDid: $recipient) {
          id status paymentTypes feeShareBps recipient { did displayName payable payoutStatus }
        }
      }
    }`,
    variables: (call) => {
      const product = productOf(call)
      return { environment: product.environment ?? null, recipient: product.recipientDid }
    },
  },
  operation: `mutation Initiate($product: String!, $authorization: CheckoutAuthorizationInput!) {
    initiateCheckout(product: $product, authorization: $authorization) { token url }
  }`,
  variables: ({ input }, { appAccess: a }) => {
    const approval = a.recipientApproval
    return {
      product: input.product,
      authorization: {
        environment: a.environment,
        serviceFee: a.config.ticketFee,
        approval: approval ? { id: approval.id, status: approval.status, paymentTypes: approval.paymentTypes, feeShareBps: approval.feeShareBps } : null,
        recipient: approval?.recipient ?? null,
      },
    }
  },
  output: ({ initiateCheckout: c }) => ({ token: c.token, url: c.url }),
  // An app configured for test and live must name the environment in the product: that is the product's fault.
  errors: { ...APP_ACCESS_ERRORS, InvalidRequest: 'InvalidProduct' },
}
