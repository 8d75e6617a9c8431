/**
 * Hosted checkouts (network.svc.payment.initiate / status, and the checkout page's reads and actions).
 *
 * initiate decides, in this order: the product (InvalidProduct), its environment against the one the apps subgraph
 * resolved (InvalidProduct), a processor for that environment (ProcessorNotConfigured), then, unless the app sells
 * for itself, the recipient's approval of the app (AppUnauthorized) and the recipient's payout readiness
 * (RecipientNotPayable), then the money (InvalidProduct when the fees exceed the amount). Only then is the order id
 * consulted: one checkout per (app, environment, appOrderId), held by a unique index, so concurrent duplicates
 * converge on one checkout and get its tokens.
 */
import { createHash, randomBytes } from 'node:crypto'
import { TID } from '@atproto/common'
import { encodeProduct, parseProduct } from '@svc/checkout-product'

import { ContractError } from '@svc/errors'
import { isDuplicateKeyError, type CheckoutDoc, type CheckoutStatus, type FailureReason } from '../models'
import type { Card, PaymentProcessor } from '../processors'
import { validateCard, type CardInput } from './card'
import { nowOf, type PaymentsDomain } from './context'
import { computeCharges, type ServiceFeeRate } from './fees'
import {
  claimSettlement,
  FAILURE_MESSAGES,
  finishSettlement,
  recordOutcome,
  recoverCheckout,
  settleOnRead,
  type SettlementOutcome,
} from './settlement'
import { deriveToken, hashToken, newNonce, tokenEnvironment } from './tokens'
import { parseEnvironment, type Environment } from '@svc/vocabulary'

/** Payment types a hosted checkout takes today; subscription and ticket come with the billing and tickets domains. */
export const ONE_TIME_PAYMENT_TYPES: ReadonlySet<string> = new Set(['tip', 'shop'])

/** What the apps subgraph established for this app before the call (GraphQL `CheckoutAuthorizationInput`). */
export interface CheckoutAuthorization {
  /** the environment the app works in for this checkout (the product's, else the app's only configured one) */
  environment: string
  /** the app's platform fee rates in that environment */
  serviceFee: ServiceFeeRate
  /** the app's approval by the recipient; null when there is none */
  approval: { id: string; status: string; paymentTypes: string[]; feeShareBps: number } | null
  /** the recipient actor in that environment; null when unknown */
  recipient: { did: string; displayName?: string | null; payable: boolean; payoutStatus: string } | null
}

export interface CheckoutStarted {
  /** the app's status token */
  token: string
  /** the buyer's page: `${checkoutUrl}/checkout/<browser token>` */
  url: string
  checkoutId: string
}

export interface PaymentRef {
  uri: string
  cid: string
}

export interface PaymentStatusView {
  status: CheckoutStatus
  ref: PaymentRef | null
}

export interface CheckoutView {
  id: string
  environment: Environment
  status: CheckoutStatus
  failureReason: FailureReason | null
  failureMessage: string | null
  recipientDid: string
  recipientName: string | null
  paymentType: string
  description: string
  currency: string
  amount: number
  serviceFee: number
  buyerFee: number
  total: number
  returnUrl: string
  cancelUrl: string
  expiresAt: string
  ref: PaymentRef | null
}

type StoredCheckout = CheckoutDoc & { _id: string }

const PROCESSOR_TIMEOUT_MS = 30_000

type TokenSource = Pick<StoredCheckout, '_id' | 'environment' | 'nonce'>

function tokensOf(d: PaymentsDomain, checkout: TokenSource): { statusToken: string; browserToken: string } {
  const env = checkout.environment as Environment
  return {
    statusToken: deriveToken(d.tokenSecret, 'status', env, checkout._id, checkout.nonce),
    browserToken: deriveToken(d.tokenSecret, 'browser', env, checkout._id, checkout.nonce),
  }
}

function started(d: PaymentsDomain, checkout: TokenSource): CheckoutStarted {
  const { statusToken, browserToken } = tokensOf(d, checkout)
  return { token: statusToken, url: `${d.checkoutUrl.replace(/\/+$/, '')}/checkout/${browserToken}`, checkoutId: checkout._id }
}

function unauthorized(message: string): never {
  throw new ContractError('AppUnauthorized', message)
}

function refString(ref: { uri?: string | null; cid?: string | null } | null | undefined): PaymentRef | null {
  return ref?.uri && ref.cid ? { uri: ref.uri, cid: ref.cid } : null
}

export function toCheckoutView(c: StoredCheckout): CheckoutView {
  return {
    id: c._id,
    environment: c.environment as Environment,
    status: c.status as CheckoutStatus,
    failureReason: (c.failureReason ?? null) as FailureReason | null,
    failureMessage: c.failureMessage ?? null,
    recipientDid: c.recipientDid,
    recipientName: c.recipientName ?? null,
    paymentType: c.paymentType,
    description: c.description,
    currency: c.currency,
    amount: c.amount,
    serviceFee: c.serviceFee,
    buyerFee: c.buyerFee,
    total: c.total,
    returnUrl: c.returnUrl,
    cancelUrl: c.cancelUrl,
    expiresAt: new Date(c.expiresAt).toISOString(),
    ref: refString(c.ref),
  }
}

/**
 * Starts a hosted checkout for `appDid`, or returns the existing one of the same app order id: a repeat with the same
 * product gets the same token and url whatever the attempt's state (one app order id per purchase attempt); a repeat
 * with a different product is InvalidProduct.
 */
export async function initiateCheckout(
  d: PaymentsDomain,
  input: { appDid: string; product: string; authorization: CheckoutAuthorization },
): Promise<CheckoutStarted> {
  const parsed = parseProduct(input.product)
  if (!parsed.ok) throw new ContractError('InvalidProduct', `invalid checkout product: ${parsed.reason}`)
  if (!ONE_TIME_PAYMENT_TYPES.has(parsed.product.paymentType)) {
    // A subscription needs the billing domain (renewals) and a ticket its hold (tickets domain): charging them as
    // one-time payments would lose the subscription or oversell the tier, so they are refused until those land.
    throw new ContractError('InvalidProduct', `invalid checkout product: ${parsed.product.paymentType} checkouts are not available yet (tip and shop are)`)
  }
  const product = parsed.product
  const auth = input.authorization
  const environment = parseEnvironment(auth.environment)
  if (product.environment !== undefined && product.environment !== environment) {
    throw new ContractError('InvalidProduct', `invalid checkout product: it is for ${product.environment}, but this checkout is in ${environment}`)
  }
  d.processors.forEnvironment(environment)

  const selfSale = product.recipientDid === input.appDid
  let feeShareBps = 0
  let approvalId: string | null = null
  let recipientName: string | null = null
  if (selfSale) {
    // an app selling for itself needs no approval and no payout facts
    if (auth.recipient?.did === product.recipientDid) recipientName = auth.recipient.displayName ?? null
  } else {
    const approval = auth.approval
    if (!approval) unauthorized(`recipient ${product.recipientDid} has not approved this app in ${environment}`)
    if (approval.status !== 'approved') unauthorized(`this app's approval by recipient ${product.recipientDid} is ${approval.status}, not approved`)
    if (!approval.paymentTypes.includes(product.paymentType)) {
      unauthorized(
        `recipient ${product.recipientDid} approved this app for ${approval.paymentTypes.join(', ') || 'no'} payments, not ${product.paymentType}`,
      )
    }
    const recipient = auth.recipient
    if (!recipient) throw new ContractError('RecipientNotPayable', `recipient ${product.recipientDid} is unknown in ${environment}`)
    if (recipient.did !== product.recipientDid) throw new ContractError('InvalidRequest', 'the recipient facts are of another DID than the product’s')
    if (!recipient.payable) {
      throw new ContractError('RecipientNotPayable', `recipient ${product.recipientDid} cannot receive payments now (payout status ${recipient.payoutStatus})`)
    }
    feeShareBps = approval.feeShareBps
    approvalId = approval.id
    recipientName = recipient.displayName ?? null
  }
  const charges = computeCharges({ amount: product.amount, currency: product.currency, serviceFee: auth.serviceFee, feeShareBps, selfSale })
  // the canonical product string with its environment resolved: naming the environment or not is the same purchase
  const productHash = createHash('sha256').update(encodeProduct({ ...product, environment })).digest('hex')

  for (let attempt = 1; ; attempt++) {
    const now = nowOf(d)
    const _id = `chk_${randomBytes(12).toString('hex')}`
    const nonce = newNonce()
    const tokens = tokensOf(d, { _id, environment, nonce })
    try {
      await d.models.Checkout.create({
        _id,
        appDid: input.appDid,
        environment,
        appOrderId: product.appOrderId,
        productHash,
        nonce,
        statusTokenHash: hashToken(tokens.statusToken),
        browserTokenHash: hashToken(tokens.browserToken),
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
        expiresAt: new Date(now.getTime() + d.checkoutExpirySeconds * 1000),
      })
      d.logger?.info({ checkoutId: _id, appDid: input.appDid, environment, appOrderId: product.appOrderId }, 'checkout initiated')
      return started(d, { _id, environment, nonce })
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err
    }
    const existing = await d.models.Checkout.findOne(
      { appDid: input.appDid, environment, appOrderId: product.appOrderId },
      { _id: 1, environment: 1, nonce: 1, productHash: 1, statusTokenHash: 1 },
    ).lean()
    if (!existing) {
      // the duplicate was a token hash (never in practice): try again with a new id and nonce
      if (attempt < 3) continue
      throw new Error('could not create a checkout')
    }
    if (existing.productHash !== productHash) {
      throw new ContractError(
        'InvalidProduct',
        `appOrderId ${product.appOrderId} was already used for a different product; use a new appOrderId for each purchase attempt`,
      )
    }
    const again = started(d, existing as TokenSource)
    if (hashToken(again.token) !== existing.statusTokenHash) {
      // the token secret changed since this checkout started: its tokens cannot be derived again
      throw new Error(`checkout ${existing._id}: the payment token secret changed since it started`)
    }
    return again
  }
}

const STATUS_FIELDS = { _id: 1, appDid: 1, environment: 1, status: 1, expiresAt: 1, ref: 1 } as const

/**
 * network.svc.payment.status: one indexed lookup by the token's hash. `appDid` is the calling app (null for an
 * operator, who may read any). A pending checkout past its expiry is expired by this read, so polling always ends.
 */
export async function getPaymentStatus(d: PaymentsDomain, input: { token: string | null | undefined; appDid: string | null }): Promise<PaymentStatusView> {
  const token = input.token
  if (token === undefined || token === null || token === '') throw new ContractError('MissingToken', 'the token parameter (app status token) is required')
  if (!tokenEnvironment('status', token)) throw new ContractError('InvalidToken', 'the token is not an app status token')
  const hash = hashToken(token)
  type StatusDoc = Pick<StoredCheckout, '_id' | 'appDid' | 'environment' | 'status' | 'expiresAt' | 'ref'>
  const load = () => d.models.Checkout.findOne({ statusTokenHash: hash }, STATUS_FIELDS).lean() as Promise<StatusDoc | null>
  const found = await load()
  if (!found) throw new ContractError('NotFound', 'no payment for this token')
  if (input.appDid !== null && found.appDid !== input.appDid) unauthorized('this payment belongs to another app')
  const doc = await settleOnRead(d, found, load)
  return { status: doc.status as CheckoutStatus, ref: refString(doc.ref) }
}

async function findByBrowserToken(d: PaymentsDomain, browserToken: string): Promise<{ checkout: StoredCheckout; reload: () => Promise<StoredCheckout | null> }> {
  if (typeof browserToken !== 'string' || !tokenEnvironment('browser', browserToken)) {
    throw new ContractError('InvalidToken', 'this is not a checkout link')
  }
  const hash = hashToken(browserToken)
  const reload = () => d.models.Checkout.findOne({ browserTokenHash: hash }).lean() as Promise<StoredCheckout | null>
  const checkout = await reload()
  if (!checkout) throw new ContractError('NotFound', 'no checkout for this link')
  return { checkout: await settleOnRead(d, checkout, reload), reload }
}

/** The hosted page's view of a checkout (its browser token), expired or finished first when due. */
export async function getCheckout(d: PaymentsDomain, browserToken: string): Promise<CheckoutView> {
  return toCheckoutView((await findByBrowserToken(d, browserToken)).checkout)
}

const closed = () => new ContractError('CheckoutClosed', 'this checkout was already paid or closed')

async function charge(d: PaymentsDomain, processor: PaymentProcessor, checkout: StoredCheckout, card: Card): Promise<SettlementOutcome> {
  const timeoutMs = d.processorTimeoutMs ?? PROCESSOR_TIMEOUT_MS
  let timer: NodeJS.Timeout | undefined
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`processor ${processor.name} did not answer within ${timeoutMs} ms`)), timeoutMs)
    })
    const result = await Promise.race([
      processor.charge({ checkoutId: checkout._id, amount: checkout.total, currency: checkout.currency, card, idempotencyKey: `checkout:${checkout._id}` }),
      timeout,
    ])
    if (result.ok) return { ok: true, chargeId: result.chargeId }
    return { ok: false, reason: result.code === 'processing_error' ? 'processor_error' : 'declined', code: result.code, message: result.message }
  } catch (err) {
    // never log the card: only the processor's error
    d.logger?.error({ checkoutId: checkout._id, err: (err as Error).message }, 'payment processor call failed')
    return { ok: false, reason: 'processor_error', code: 'processing_error', message: FAILURE_MESSAGES.processorUnreachable }
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The buyer pays: the card form is checked first (InvalidRequest; the checkout stays payable), then the settlement
 * is claimed (someone else had it: CheckoutClosed), the checkout is `processing` while the processor charges, and
 * the outcome ends it (completed, or failed as declined / processor_error). Never charges a checkout twice.
 */
export async function payCheckout(d: PaymentsDomain, browserToken: string, cardInput: CardInput): Promise<CheckoutView> {
  const { checkout, reload } = await findByBrowserToken(d, browserToken)
  if (checkout.status !== 'pending') throw closed()
  const card = validateCard(cardInput, nowOf(d))
  const processor = d.processors.forEnvironment(checkout.environment as Environment)
  const won = await claimSettlement(d, checkout, 'payment', { processor: processor.name, recordTid: TID.nextStr() })
  if (!won) {
    await recoverCheckout(d, checkout._id)
    throw closed()
  }
  await d.models.Checkout.updateOne({ _id: checkout._id, status: 'pending' }, { $set: { status: 'processing' } })
  const outcome = await charge(d, processor, checkout, card)
  await recordOutcome(d, checkout._id, outcome)
  await finishSettlement(d, checkout._id)
  const after = await reload()
  if (!after) throw new Error(`checkout ${checkout._id} vanished`)
  return toCheckoutView(after)
}

/** The buyer cancels a pending checkout: it fails as `canceled` (a closed one: CheckoutClosed). */
export async function cancelCheckout(d: PaymentsDomain, browserToken: string): Promise<CheckoutView> {
  const { checkout, reload } = await findByBrowserToken(d, browserToken)
  if (checkout.status !== 'pending') throw closed()
  const won = await claimSettlement(d, checkout, 'cancel', {
    outcome: { ok: false, reason: 'canceled', code: 'canceled', message: FAILURE_MESSAGES.canceled },
  })
  if (!won) {
    await recoverCheckout(d, checkout._id)
    throw closed()
  }
  await finishSettlement(d, checkout._id)
  const after = await reload()
  if (!after) throw new Error(`checkout ${checkout._id} vanished`)
  return toCheckoutView(after)
}
