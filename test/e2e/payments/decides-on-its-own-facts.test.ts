/**
 * The payments mutations sent straight to the gateway with an app's signed context, as any internal caller could,
 * without the XRPC adapter: the payments domain reads the approval, the recipient's payout readiness and the fee
 * rates itself (through the graph, as the service `payments`), and its mutations accept no facts from the caller. So
 * no checkout starts for a recipient who has not approved the app, whose approval is for another environment, or
 * who cannot be paid; and an app link is refused for a record whose repository is no actor.
 */
import type { Principal } from '@svc/internal-context'
import { signedContext } from '@svc/testing'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { product } from '../adapter/payment-helpers'

let stack: TestStack
let app: TestApp

interface Answer {
  data?: any
  errors?: { message: string; extensions?: { code?: string } }[]
}

async function gql(principal: Principal, query: string, variables: Record<string, unknown>): Promise<Answer> {
  const res = await fetch(stack.gatewayUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'svc-context': signedContext(stack.secrets.callerKeys, principal) },
    body: JSON.stringify({ query, variables }),
  })
  expect(res.status).toBe(200)
  return (await res.json()) as Answer
}

const asApp = (): Principal => ({ kind: 'app', appDid: app.did })
const codeOf = (a: Answer) => a.errors?.[0]?.extensions?.code
const INITIATE = `mutation($product: String!) { initiateCheckout(product: $product) { token url checkoutId } }`
const REQUEST = `mutation($input: RecipientApprovalInput!) { requestRecipientApproval(input: $input) { id termsHash status } }`
const ACCEPT = `mutation($id: ID!, $termsHash: String!) { acceptRecipientApproval(id: $id, termsHash: $termsHash) { status } }`
const LINK = `mutation($input: RegisterAppLinkInput!) { registerAppLink(input: $input) { id environment } }`

/** A creator of `environments` with a payout status, and the app's approval request to it in `approvedIn`, accepted there. */
async function creator(opts: { environments: ('test' | 'live')[]; payoutStatus: 'ready' | 'onboarding-required' | 'restricted'; approvedIn?: 'test' | 'live'; requestedIn?: 'test' }) {
  const first = await stack.newActor({ environment: opts.environments[0]!, payoutStatus: opts.payoutStatus })
  for (const environment of opts.environments.slice(1)) await stack.newActor({ did: first.did, environment, payoutStatus: opts.payoutStatus })
  const environment = opts.approvedIn ?? opts.requestedIn
  if (environment) {
    const requested = await gql(asApp(), REQUEST, { input: { environment, recipientDid: first.did, paymentTypes: ['tip', 'shop'] } })
    expect(requested.errors).toBeUndefined()
    const { id, termsHash } = requested.data.requestRecipientApproval
    if (opts.approvedIn) {
      const accepted = await gql({ kind: 'dashboard', actorDid: first.did, environment, sessionId: 'sess_facts' }, ACCEPT, { id, termsHash })
      expect(accepted.data?.acceptRecipientApproval.status).toBe('approved')
    }
  }
  return first.did
}

async function expectNoCheckout(recipientDid: string, code: string) {
  const answer = await gql(asApp(), INITIATE, { product: product(recipientDid, { environment: 'test' }) })
  expect(answer.data ?? null).toBeNull()
  expect(codeOf(answer)).toBe(code)
  expect(await stack.payments.Checkout.countDocuments({ recipientDid })).toBe(0)
}

beforeAll(async () => {
  stack = await startStack('payments-own-facts', { workers: false })
  app = await stack.newApp({ environments: ['test', 'live'] })
})

afterAll(async () => {
  await stack.stop()
})

test('an approved, payable recipient: the checkout starts (the same path the refusals below take)', async () => {
  const did = await creator({ environments: ['test'], payoutStatus: 'ready', approvedIn: 'test' })
  const answer = await gql(asApp(), INITIATE, { product: product(did, { environment: 'test' }) })
  expect(answer.errors).toBeUndefined()
  expect(answer.data.initiateCheckout.url).toMatch(/\/checkout\/cko_test_/)
  expect(await stack.payments.Checkout.countDocuments({ recipientDid: did })).toBe(1)
})

test('the fee share a creator accepted is capped by the app\'s registered share now (an operator lowered it since)', async () => {
  const lowered = await stack.newApp()
  const recipient = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
  const asLowered: Principal = { kind: 'app', appDid: lowered.did }
  const requested = await gql(asLowered, REQUEST, { input: { environment: 'test', recipientDid: recipient.did, paymentTypes: ['tip'], feeShareBps: 400 } })
  const { id, termsHash } = requested.data.requestRecipientApproval
  await gql({ kind: 'dashboard', actorDid: recipient.did, environment: 'test', sessionId: 'sess_cap' }, ACCEPT, { id, termsHash })
  await stack.models.AppEnvironment.updateOne({ appDid: lowered.did, environment: 'test' }, { $set: { feeShareBps: 100 } })
  const answer = await gql(asLowered, INITIATE, { product: product(recipient.did, { environment: 'test', amount: 10_000 }) })
  expect(answer.errors).toBeUndefined()
  const checkout = (await stack.payments.Checkout.findById(answer.data.initiateCheckout.checkoutId).lean())!
  expect(checkout).toMatchObject({ feeShareBps: 100, appFee: 100 })
})

test('a recipient who has not approved the app → AppUnauthorized, no checkout', async () => {
  await expectNoCheckout(await creator({ environments: ['test'], payoutStatus: 'ready' }), 'AppUnauthorized')
  // asked but not yet approved
  await expectNoCheckout(await creator({ environments: ['test'], payoutStatus: 'ready', requestedIn: 'test' }), 'AppUnauthorized')
})

test('a recipient whose approval is for the other environment → AppUnauthorized, no checkout', async () => {
  await expectNoCheckout(await creator({ environments: ['test', 'live'], payoutStatus: 'ready', approvedIn: 'live' }), 'AppUnauthorized')
})

test('an approved recipient who cannot be paid → RecipientNotPayable, no checkout', async () => {
  await expectNoCheckout(await creator({ environments: ['test'], payoutStatus: 'onboarding-required', approvedIn: 'test' }), 'RecipientNotPayable')
  await expectNoCheckout(await creator({ environments: ['test'], payoutStatus: 'restricted', approvedIn: 'test' }), 'RecipientNotPayable')
})

test('a recipient whose profile no longer accepts the payment type (an operator narrowed it) → RecipientNotPayable, no checkout', async () => {
  const did = await creator({ environments: ['test'], payoutStatus: 'ready', approvedIn: 'test' })
  await stack.newActor({ did, environment: 'test', paymentTypes: ['shop'] })
  await expectNoCheckout(did, 'RecipientNotPayable')
})

test('the caller cannot assert the facts: the mutation has no argument for them', async () => {
  const did = await creator({ environments: ['test'], payoutStatus: 'onboarding-required' })
  const forged = {
    environment: 'test',
    serviceFee: { bps: 0, flatAmount: 0, flatCurrency: 'usd', passToBuyer: false },
    approval: { id: 'apr_forged', status: 'approved', paymentTypes: ['tip'], feeShareBps: 0 },
    recipient: { did, payable: true, payoutStatus: 'ready' },
  }
  const answer = await gql(
    asApp(),
    `mutation($product: String!, $authorization: CheckoutAuthorizationInput!) { initiateCheckout(product: $product, authorization: $authorization) { token } }`,
    { product: product(did, { environment: 'test' }), authorization: forged },
  )
  // refused by the gateway's validation against the composed schema, before any subgraph runs
  expect(answer.data ?? null).toBeNull()
  expect(answer.errors?.map((e) => e.message).join(' ')).toMatch(/CheckoutAuthorizationInput|authorization/)
  expect(await stack.payments.Checkout.countDocuments({ recipientDid: did })).toBe(0)
})

test('an app link for a record whose repository is no actor → ActorNotFound; off the app origin → AppUrlNotAllowed', async () => {
  const stranger = `did:plc:nobody${Date.now().toString(36)}`
  const unknown = await gql(asApp(), LINK, {
    input: { environment: 'test', recordUri: `at://${stranger}/money.svc.catalog.product/3lrec`, fulfillmentUrl: 'https://app.example.com/f' },
  })
  expect(codeOf(unknown)).toBe('ActorNotFound')
  const known = await creator({ environments: ['test'], payoutStatus: 'ready' })
  const offOrigin = await gql(asApp(), LINK, {
    input: { environment: 'test', recordUri: `at://${known}/money.svc.catalog.product/3lrec`, fulfillmentUrl: 'https://elsewhere.example/f' },
  })
  expect(codeOf(offOrigin)).toBe('AppUrlNotAllowed')
  expect(await stack.payments.AppLink.countDocuments({ appDid: app.did })).toBe(0)
})
