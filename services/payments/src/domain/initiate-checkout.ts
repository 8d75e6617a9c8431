/**
 * network.svc.payment.initiate: the app starts a hosted checkout.
 *
 * It reads its facts itself (app-facts.ts: the app's environment and fee rates, its approval by the recipient, the
 * recipient's payout readiness), then decides, in this order: the product (InvalidProduct), its environment against
 * the one the app works in (InvalidProduct), a processor for that environment (ProcessorNotConfigured), then, unless the app sells
 * for itself, the recipient's approval of the app (AppUnauthorized) and the recipient's payout readiness
 * (RecipientNotPayable), then the money (InvalidProduct when the fees exceed the amount, unless the same product
 * already has its checkout under this order id: the rates changed since). Only then is the order id consulted: one checkout per (app, environment, appOrderId), held by a unique index, so concurrent duplicates
 * converge on one checkout and get its tokens.
 */
import { createHash, randomBytes } from 'node:crypto'
import { canonicalProduct, parseProduct } from '@svc/checkout-product'
import { ContractError } from '@svc/errors'
import { parseEnvironment, type Environment } from '@svc/vocabulary'
import { isDuplicateKeyError } from '../models'
import { authorizationOf } from './authorization'
import { ownPageOf, type StoredCheckout } from './checkout-view'
import { nowOf, type PaymentsDomain, type ServingPayments } from './context'
import { computeCharges } from './fees'
import { deriveToken, hashToken, newNonce } from './tokens'
import type { CheckoutStarted } from '../generated/graph-types'

/** Payment types an app's initiate takes today: a subscription comes with the billing domain; a ticket's checkout comes with its hold. */
export const ONE_TIME_PAYMENT_TYPES: ReadonlySet<string> = new Set(['tip', 'shop'])

export type { CheckoutStarted }

type TokenSource = Pick<StoredCheckout, '_id' | 'environment' | 'nonce'>

function tokensOf(secret: string, checkout: TokenSource): { statusToken: string; browserToken: string } {
  const env = checkout.environment as Environment
  return {
    statusToken: deriveToken(secret, 'status', env, checkout._id, checkout.nonce),
    browserToken: deriveToken(secret, 'browser', env, checkout._id, checkout.nonce),
  }
}

function started(d: PaymentsDomain, checkout: TokenSource, secret = d.tokenSecret): CheckoutStarted {
  const { statusToken, browserToken } = tokensOf(secret, checkout)
  return { token: statusToken, url: ownPageOf(d, browserToken), checkoutId: checkout._id }
}

/**
 * The tokens of a stored checkout again: derived with the secret that made them, the current one or, during a
 * rotation, the previous one (the stored hash tells which).
 */
function startedAgain(d: PaymentsDomain, checkout: TokenSource & { statusTokenHash: string }): CheckoutStarted {
  for (const secret of [d.tokenSecret, d.previousTokenSecret]) {
    if (!secret) continue
    const again = started(d, checkout, secret)
    if (hashToken(again.token) === checkout.statusTokenHash) return again
  }
  // neither secret made them (PAYMENT_TOKEN_SECRET_PREVIOUS removed once the checkouts started under it had settled or
  // expired): handing out tokens that do not work would be worse than refusing. The app order id stays used; the
  // token the app kept still answers status
  d.logger?.warn({ checkoutId: checkout._id }, 'repeat initiate of a checkout started under a payment token secret no longer held: refused')
  throw new ContractError(
    'InvalidProduct',
    'this appOrderId was initiated before the service last changed its token secret, so its token cannot be given again: read its status with the token you kept, or use a new appOrderId',
  )
}

/**
 * Starts a hosted checkout for `appDid`, or returns the existing one of the same app order id: a repeat with the same
 * product gets the same token and url whatever the attempt's state (one app order id per purchase attempt); a repeat
 * with a different product is InvalidProduct.
 */
export async function initiateCheckout(d: ServingPayments, input: { appDid: string; product: string }): Promise<CheckoutStarted> {
  const parsed = parseProduct(input.product)
  if (!parsed.ok) throw new ContractError('InvalidProduct', `invalid checkout product: ${parsed.reason}`)
  if (parsed.product.paymentType === 'ticket') {
    // a ticket is paid on its hold's checkout (start-ticket-checkout.ts): a checkout of its own could sell a seat twice
    throw new ContractError('InvalidProduct', 'invalid checkout product: ticket checkouts come from tickets.svc.createTicketHold, whose answer carries the checkout url')
  }
  if (!ONE_TIME_PAYMENT_TYPES.has(parsed.product.paymentType)) {
    // A subscription needs the billing domain (renewals): charging it as a one-time payment would lose it.
    throw new ContractError('InvalidProduct', `invalid checkout product: ${parsed.product.paymentType} checkouts are not available yet (tip and shop are)`)
  }
  const product = parsed.product
  const auth = await d.facts.checkout(input.appDid, product.environment ?? null, product.recipientDid)
  const environment = parseEnvironment(auth.environment)
  if (product.environment !== undefined && product.environment !== environment) {
    throw new ContractError('InvalidProduct', `invalid checkout product: it is for ${product.environment}, but this checkout is in ${environment}`)
  }
  d.processors.forEnvironment(environment)

  const selfSale = product.recipientDid === input.appDid
  let feeShareBps = 0
  let approvalId: string | null = null
  let approvalRevision: number | null = null
  let recipientName: string | null = null
  if (selfSale) {
    // an app selling for itself needs no approval and no payout facts
    if (auth.recipient?.did === product.recipientDid) recipientName = auth.recipient.displayName ?? null
  } else {
    if (auth.recipient && auth.recipient.did !== product.recipientDid) throw new ContractError('InvalidRequest', 'the recipient facts are of another DID than the product’s')
    const authorization = authorizationOf({ ...auth, environment }, product.recipientDid, product.paymentType)
    if (!authorization.ok) throw authorization.error
    ;({ feeShareBps, approvalId, approvalRevision, recipientName } = authorization)
  }
  // the canonical product string with its environment resolved: naming the environment or not is the same purchase
  // (and, not sent anywhere, it may be longer than a product string may be: the environment adds 28 characters)
  const productHash = createHash('sha256').update(canonicalProduct({ ...product, environment })).digest('hex')
  let charges: ReturnType<typeof computeCharges>
  try {
    charges = computeCharges({ amount: product.amount, currency: product.currency, serviceFee: auth.serviceFee, feeShareBps, selfSale })
  } catch (err) {
    // today's rates refuse the amount (they changed since, say passToBuyer turned off): a repeat of an order whose
    // checkout started under the rates it snapshotted still gets that checkout, which can still be paid
    const again = await findStartedCheckout(d, { appDid: input.appDid, environment, appOrderId: product.appOrderId }, productHash)
    if (again) return again
    throw err
  }

  return createOrFindCheckout(d, { appDid: input.appDid, environment, appOrderId: product.appOrderId, productHash }, () => ({
    status: 'pending',
    recipientDid: product.recipientDid,
    paymentType: product.paymentType,
    description: product.description,
    currency: product.currency,
    amount: product.amount,
    returnUrl: product.returnUrl,
    cancelUrl: product.cancelUrl,
    cadence: product.cadence ?? null,
    holdId: product.holdId ?? null,
    selfSale,
    recipientName,
    approvalId,
    approvalRevision,
    feeShareBps,
    serviceFeeRate: {
      bps: auth.serviceFee.bps,
      flatAmount: auth.serviceFee.flatAmount,
      flatCurrency: auth.serviceFee.flatCurrency,
      passToBuyer: auth.serviceFee.passToBuyer,
    },
    serviceFee: charges.serviceFee,
    buyerFee: charges.buyerFee,
    appFee: charges.appFee,
    total: charges.total,
    recipientNet: charges.recipientNet,
    expiresAt: new Date(nowOf(d).getTime() + d.checkoutExpirySeconds * 1000),
  }))
}

/** What a new checkout stores besides its key, its tokens and its id (given its browser URL). */
export type CheckoutFields = Omit<StoredCheckout, '_id' | 'appDid' | 'environment' | 'appOrderId' | 'productHash' | 'nonce' | 'statusTokenHash' | 'browserTokenHash' | 'failureReason' | 'failureMessage' | 'ref' | 'completedAt' | 'failedAt' | 'createdAt' | 'updatedAt'>

/**
 * Inserts a checkout under its key (app, environment, appOrderId), or finds the one a duplicate inserted first: the
 * same product (its hash) gets that checkout's tokens again; another product is InvalidProduct.
 */
/** The checkout started before under this key (of this product, when given its hash), answered as its start was; null when there is none. */
export async function findStartedCheckout(d: PaymentsDomain, key: { appDid: string; environment: Environment; appOrderId: string }, productHash?: string): Promise<CheckoutStarted | null> {
  const existing = await d.models.Checkout.findOne(key, { _id: 1, environment: 1, nonce: 1, statusTokenHash: 1, productHash: 1 }).lean()
  if (!existing || (productHash !== undefined && existing.productHash !== productHash)) return null
  return startedAgain(d, existing as TokenSource & { statusTokenHash: string })
}

export async function createOrFindCheckout(
  d: PaymentsDomain,
  key: { appDid: string; environment: Environment; appOrderId: string; productHash: string },
  fields: (browserUrl: string) => CheckoutFields,
): Promise<CheckoutStarted> {
  const { environment } = key
  for (let attempt = 1; ; attempt++) {
    const _id = `chk_${randomBytes(12).toString('hex')}`
    const nonce = newNonce()
    const tokens = tokensOf(d.tokenSecret, { _id, environment, nonce })
    try {
      const result = started(d, { _id, environment, nonce })
      await d.models.Checkout.create({
        _id,
        appDid: key.appDid,
        environment,
        appOrderId: key.appOrderId,
        productHash: key.productHash,
        nonce,
        statusTokenHash: hashToken(tokens.statusToken),
        browserTokenHash: hashToken(tokens.browserToken),
        ...fields(result.url),
      })
      d.logger?.info({ checkoutId: _id, appDid: key.appDid, environment, appOrderId: key.appOrderId }, 'checkout initiated')
      return result
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err
    }
    const existing = await d.models.Checkout.findOne(
      { appDid: key.appDid, environment, appOrderId: key.appOrderId },
      { _id: 1, environment: 1, nonce: 1, productHash: 1, statusTokenHash: 1, holdId: 1 },
    ).lean()
    if (!existing) {
      // the duplicate was a token hash (never in practice): try again with a new id and nonce
      if (attempt < 3) continue
      throw new Error('could not create a checkout')
    }
    if (existing.productHash !== key.productHash) {
      // a hold's checkout is keyed by the hold id (start-ticket-checkout.ts): the app did not use it itself
      if (existing.holdId) throw new ContractError('InvalidProduct', `appOrderId ${key.appOrderId} is a ticket hold's id, which its checkout uses as its order id; use another appOrderId`)
      throw new ContractError(
        'InvalidProduct',
        `appOrderId ${key.appOrderId} was already used for a different product; use a new appOrderId for each purchase attempt`,
      )
    }
    return startedAgain(d, existing as TokenSource & { statusTokenHash: string })
  }
}
