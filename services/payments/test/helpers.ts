/**
 * Helpers of the payments tests (not a test file): a payments domain on its own database of the test FerretDB, a
 * controllable clock, products, the other domains' facts, and contract-error assertions.
 *
 * `isolate` is imported from its module rather than the @svc/testing index, which also loads the whole stack
 * (gateway, adapter, every subgraph) that these domain tests do not need.
 */
import { randomBytes } from 'node:crypto'
import type mongoose from 'mongoose'
import { encodeProduct, type CheckoutProduct } from '@svc/checkout-product'
import { ContractError, type ErrorCode } from '@svc/errors'
import { contractError } from '@svc/testing/src/contract-error'
import { isolate } from '@svc/testing/src/isolation'
import { connectPayments, createProcessorRegistry, type AppFacts, type CheckoutFacts, type PaymentsDomain, type PaymentsModels, type ServingPayments } from '../src'

export const SERVICE_DID = 'did:web:svc.test'
export const CHECKOUT_URL = 'http://checkout.test'

export interface TestDomain {
  /** the database of this domain, for programs run beside the test (operator commands) */
  mongoUrl: string
  conn: mongoose.Connection
  models: PaymentsModels
  /** the domain as it serves a request; the other domains' facts approve every checkout (authorizationFor) unless a test says otherwise (serving) */
  domain: ServingPayments
  clock: { now: Date; advance(ms: number): void }
  close(): Promise<void>
}

export async function openDomain(label: string, over: Partial<PaymentsDomain> = {}): Promise<TestDomain> {
  const { mongoUrl } = isolate(label)
  const { conn, models } = await connectPayments(mongoUrl)
  const clock = {
    now: new Date(),
    advance(ms: number) {
      clock.now = new Date(clock.now.getTime() + ms)
    },
  }
  const base: PaymentsDomain = {
    models,
    processors: createProcessorRegistry({ liveProcessor: 'none' }, models),
    serviceDid: SERVICE_DID,
    checkoutUrl: CHECKOUT_URL,
    tokenSecret: randomBytes(32).toString('hex'),
    checkoutExpirySeconds: 24 * 3600,
    now: () => clock.now,
    ...over,
  }
  const domain = serving(base, { checkout: (recipientDid) => authorizationFor(recipientDid) })
  return {
    mongoUrl,
    conn,
    models,
    domain,
    clock,
    async close() {
      await conn.dropDatabase().catch(() => undefined)
      await conn.close()
    },
  }
}

let seq = 0
export const newDid = (kind = 'creator') => `did:plc:${kind}${(++seq).toString().padStart(4, '0')}${randomBytes(6).toString('hex')}`
export const newOrderId = () => `order-${randomBytes(6).toString('hex')}`

export function productOf(recipientDid: string, fields: Partial<CheckoutProduct> = {}): string {
  return encodeProduct({
    recipientDid,
    paymentType: 'tip',
    amount: 1000,
    currency: 'usd',
    appOrderId: newOrderId(),
    description: 'A tip for the stream',
    returnUrl: 'https://app.example.com/thanks',
    cancelUrl: 'https://app.example.com/cancel',
    ...fields,
  } as CheckoutProduct)
}

/** An approved, payable recipient in test: 2.5 % + 30 (usd) service fee, not passed on; 5 % app fee share. */
export function authorizationFor(recipientDid: string, over: Partial<CheckoutFacts> = {}): CheckoutFacts {
  return {
    environment: 'test',
    serviceFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: false },
    feeShareCapBps: 500,
    approval: { id: 'apr_test', revision: 1, status: 'approved', paymentTypes: ['tip', 'shop'], feeShareBps: 500 },
    recipient: { did: recipientDid, displayName: 'Ada Creator', payable: true, payoutStatus: 'ready', paymentTypes: ['tip', 'shop'] },
    ...over,
  }
}

export { contractError }

export async function expectCode(p: Promise<unknown> | (() => unknown), code: ErrorCode, message?: RegExp): Promise<ContractError> {
  const err = await contractError(p)
  expect(err.code).toBe(code)
  if (message) expect(err.message).toMatch(message)
  return err
}

export const GOOD_CARD = { number: '4242 4242 4242 4242', expMonth: 12, expYear: new Date().getUTCFullYear() + 2, cvc: '123', name: 'Bea Buyer' }
export const DECLINED_CARD = { ...GOOD_CARD, number: '4000 0000 0000 0002' }

/** The browser token of a checkout URL. */
export const browserTokenOf = (url: string) => url.slice(url.lastIndexOf('/') + 1)

/** What the apps and actors domains answer in a test: the facts a use case reads (graph-facts.ts in the service). */
export interface TestFacts {
  /** a checkout's facts (initiateCheckout, and payCheckout reading them again), or those of each recipient */
  checkout?: CheckoutFacts | ((recipientDid: string) => CheckoutFacts)
  /** the app's registered URL and whether the record's repository is a known actor (registerAppLink) */
  appUrl?: string
  repoKnown?: boolean
  /** whether the recipient delegated proof registration (registerCreatorProof) */
  delegated?: boolean
}

/**
 * The domain serving one request, with the other domains' answers fixed for a domain test; the environment is the one
 * asked for, else test. The real reads, through the gateway and the apps and actors subgraphs, are tested end to end
 * (test/e2e/payments).
 */
export function serving(domain: PaymentsDomain, f: TestFacts = {}): ServingPayments {
  const env = (asked: string | null) => (asked === 'live' ? 'live' : 'test')
  const facts: AppFacts = {
    environment: async (_app, asked) => env(asked),
    checkout: async (_app, _asked, recipientDid) => {
      if (!f.checkout) throw new Error('this test gave no checkout facts')
      return typeof f.checkout === 'function' ? f.checkout(recipientDid) : f.checkout
    },
    appLink: async (_app, asked) => ({ environment: env(asked), appUrl: f.appUrl ?? 'https://app.example.com', repoKnown: f.repoKnown ?? true }),
    proofDelegation: async (_app, asked) => ({ environment: env(asked), delegated: f.delegated ?? true }),
  }
  return { ...domain, facts }
}
