/**
 * The hosted checkout of a ticket hold, started by the tickets domain (as the service `tickets`) when an app holds
 * paid tickets (docs/tickets.md, "Paying a hold"). Apps cannot start one with network.svc.payment.initiate: a ticket
 * checkout without its hold could sell a seat twice.
 *
 * The checkout is keyed by the hold id (its `appOrderId`), so every retry of the hold gets the same checkout, and it
 * expires with the hold. The organizer is the recipient: their assertion when they set up the tiers is what
 * authorized the app, so no approval is asked for and the app takes no share; the app's ticket fee applies. A
 * checkout without return URLs sends the buyer back to its own page, which shows how the payment ended.
 */
import { createHash } from 'node:crypto'
import { encodeProduct, InvalidProductError, parseProduct } from '@svc/checkout-product'
import { ContractError } from '@svc/errors'
import { parseEnvironment } from '@svc/vocabulary'
import type { StartTicketCheckoutInput } from '../generated/graph-types'
import { nowOf, type ServingPayments } from './context'
import { computeCharges } from './fees'
import { createOrFindCheckout, findStartedCheckout, type CheckoutStarted } from './initiate-checkout'

/** The checkout's charges; tickets that cost less than the fees kept from the organizer are the hold's bad input. */
function ticketCharges(amount: number, currency: string, serviceFee: Parameters<typeof computeCharges>[0]['serviceFee'], tickets: number) {
  try {
    return computeCharges({ amount, currency, serviceFee, feeShareBps: 0, selfSale: false, tickets })
  } catch (err) {
    if (err instanceof ContractError && err.code === 'InvalidProduct') throw new ContractError('InvalidRequest', `invalid ticket checkout: ${err.message}`)
    throw err
  }
}

export async function startTicketCheckout(d: ServingPayments, input: StartTicketCheckoutInput): Promise<CheckoutStarted> {
  const expiresAt = new Date(input.expiresAt)
  if (Number.isNaN(expiresAt.getTime())) throw new ContractError('InvalidRequest', 'expiresAt must be a timestamp')
  // the hold id is the checkout's key: a repeat of the hold gets its checkout, whatever changed since it was started
  // (the hold lapsed, is paid, or the fee rates moved)
  const started = await findStartedCheckout(d, { appDid: input.appDid, environment: parseEnvironment(input.environment), appOrderId: input.holdId })
  if (started) return started
  // the product's rules (amount, currency, URLs, description) are the same as for any checkout
  const placeholder = 'https://checkout.invalid/'
  let encoded: string
  try {
    encoded = encodeProduct({
      paymentType: 'ticket',
      holdId: input.holdId,
      // a placeholder: the checkout's real key is the hold id (below). An app's own order id could name it only by
      // reusing a hold id it was given, after the hold's checkout exists: a different product, refused InvalidProduct
      appOrderId: 'ticket-hold',
      recipientDid: input.organizerDid,
      environment: parseEnvironment(input.environment),
      description: input.description,
      amount: input.amount,
      currency: input.currency,
      returnUrl: input.returnUrl ?? placeholder,
      cancelUrl: input.cancelUrl ?? placeholder,
    })
  } catch (err) {
    // the hold's own fields make the product: only its URLs can make it too long
    if (err instanceof InvalidProductError && err.code === 'TooLong') throw new ContractError('InvalidRequest', 'returnUrl and cancelUrl are together too long for the hold\'s checkout')
    if (err instanceof InvalidProductError) throw new ContractError('InvalidRequest', `invalid ticket checkout: ${err.reason}`)
    throw err
  }
  const parsed = parseProduct(encoded)
  if (!parsed.ok) throw new ContractError('InvalidRequest', `invalid ticket checkout: ${parsed.reason}`)
  const product = parsed.product
  const auth = await d.facts.checkout(input.appDid, input.environment, input.organizerDid)
  const environment = parseEnvironment(auth.environment)
  if (environment !== product.environment) throw new ContractError('InvalidRequest', `the hold is in ${product.environment}, not ${environment}`)
  // a checkout no processor could charge (live, before one is configured) is not started: ProcessorNotConfigured
  d.processors.forEnvironment(environment)
  const charges = ticketCharges(product.amount, product.currency, auth.serviceFee, input.tickets ?? 1)
  const productHash = createHash('sha256').update(encodeProduct(product)).digest('hex')
  if (expiresAt <= nowOf(d)) throw new ContractError('InvalidRequest', 'the hold has lapsed')

  return createOrFindCheckout(d, { appDid: input.appDid, environment, appOrderId: input.holdId, productHash }, () => ({
    status: 'pending',
    recipientDid: product.recipientDid,
    paymentType: 'ticket',
    description: product.description,
    currency: product.currency,
    amount: product.amount,
    // none given: the checkout's own page, answered from its browser token when shown (never stored with it)
    returnUrl: input.returnUrl ?? null,
    cancelUrl: input.cancelUrl ?? null,
    cadence: null,
    holdId: input.holdId,
    tickets: input.tickets ?? 1,
    selfSale: false,
    recipientName: auth.recipient?.did === input.organizerDid ? (auth.recipient.displayName ?? null) : null,
    approvalId: null,
    approvalRevision: null,
    feeShareBps: 0,
    serviceFeeRate: { bps: auth.serviceFee.bps, flatAmount: auth.serviceFee.flatAmount, flatCurrency: auth.serviceFee.flatCurrency, passToBuyer: auth.serviceFee.passToBuyer },
    serviceFee: charges.serviceFee,
    buyerFee: charges.buyerFee,
    appFee: charges.appFee,
    total: charges.total,
    recipientNet: charges.recipientNet,
    expiresAt,
  }))
}
