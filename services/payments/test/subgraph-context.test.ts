/**
 * The payments subgraph is internal: a request straight to it (around the gateway) is refused with 401 unless it
 * carries a valid, unexpired context signed with the key of an issuer that may state its principal. Each operation answers only its principal:
 * apps initiate and read their own status, the hosted checkout (service `checkout`) reads and pays, operators read.
 */
import { randomBytes } from 'node:crypto'
import pino from 'pino'
import { CONTEXT_HEADER, type Principal } from '@svc/internal-context'
import { isolate } from '@svc/testing/src/isolation'
import { signedContext, testCallerKeys } from '@svc/testing/src/internal-context'
import { createProcessorRegistry, initiateCheckout, startPaymentsService, type PaymentsModels } from '../src'
import { authorizationFor, newDid, productOf, serving } from './helpers'

const keys = testCallerKeys()
const APP = 'did:web:ctx-pay-app.example.com'
const CHECKOUT_URL = 'http://127.0.0.1:9/'
const TOKEN_SECRET = randomBytes(32).toString('hex')
let payments: { url: string; models: PaymentsModels; stop(): Promise<void> }

interface Body {
  data?: any
  errors?: { message: string; extensions?: Record<string, unknown> }[]
}

async function post(query: string, variables: Record<string, unknown> = {}, context?: string): Promise<{ status: number; body: Body }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (context !== undefined) headers[CONTEXT_HEADER] = context
  const res = await fetch(payments.url, { method: 'POST', headers, body: JSON.stringify({ query, variables }) })
  return { status: res.status, body: (await res.json()) as Body }
}

const signed = (principal: Principal) => signedContext(keys, principal)
const app = (appDid = APP) => signed({ kind: 'app', appDid })
const checkoutPage = () => signed({ kind: 'service', name: 'checkout' })
const operator = () => signed({ kind: 'operator', id: 'ops' })
const codeOf = (res: { body: Body }) => res.body.errors?.[0]?.extensions?.code

const INITIATE = `mutation($product: String!) { initiateCheckout(product: $product) { token url checkoutId } }`
const STATUS = `query($token: String!) { paymentStatus(token: $token) { status ref { uri cid } } }`
const VIEW = 'id environment status failureReason failureMessage recipientDid recipientName paymentType description currency amount serviceFee buyerFee total returnUrl cancelUrl expiresAt ref { uri cid }'
const CHECKOUT = `query($browserToken: String!) { checkout(browserToken: $browserToken) { ${VIEW} } }`
const PAY = `mutation($browserToken: String!, $card: CardInput!) { payCheckout(browserToken: $browserToken, card: $card) { ${VIEW} } }`
const CANCEL = `mutation($browserToken: String!) { cancelCheckout(browserToken: $browserToken) { status } }`
const RECORD = `query($uri: String!) { paymentRecord(uri: $uri, environment: "test") { uri cid app recipient amount total processor proof { status } } }`

/**
 * A checkout of APP to a creator, started by the domain function on the subgraph's database: initiate reads the apps
 * and actors domains through the gateway, which these tests do not run (test/e2e/payments runs the whole path).
 */
function seedCheckout(creator: string) {
  const domain = {
    models: payments.models,
    processors: createProcessorRegistry({ liveProcessor: 'none' }, payments.models),
    serviceDid: 'did:web:svc.test',
    checkoutUrl: CHECKOUT_URL,
    tokenSecret: TOKEN_SECRET,
    checkoutExpirySeconds: 3600,
  }
  const facts = authorizationFor(creator, { recipient: { did: creator, displayName: 'Ada', payable: true, payoutStatus: 'ready', paymentTypes: ['tip', 'shop'] } })
  return initiateCheckout(serving(domain, { checkout: facts }), { appDid: APP, product: productOf(creator) })
}

/** A payments subgraph of its own database, verifying contexts with `callerKeys`. */
const startSubgraph = (database: string, callerKeys: typeof keys) =>
  startPaymentsService({
    mongoUrl: isolate(database).mongoUrl,
    callerKeys,
    // nothing listens there: these tests reach no operation that reads another domain
    gatewayUrl: 'http://127.0.0.1:1/graphql',
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
    serviceDid: 'did:web:svc.test',
    checkoutUrl: CHECKOUT_URL,
    tokenSecret: TOKEN_SECRET,
    checkoutExpirySeconds: 3600,
    liveProcessor: 'none',
    sweepIntervalMs: 0,
  })

beforeAll(async () => {
  payments = await startSubgraph('payments_subgraph_context', keys)
})

afterAll(async () => {
  await payments?.models.Checkout.db.dropDatabase().catch(() => undefined)
  await payments?.stop()
})

function expectRefused(res: { status: number; body: Body }, reason: string) {
  expect(res.status).toBe(401)
  expect(res.body.data ?? null).toBeNull()
  expect(codeOf(res)).toBe('UNAUTHENTICATED')
  expect(res.body.errors?.[0]?.message).toContain(`(${reason})`)
}

test('no context, a forged one, an expired one or garbage → 401, for every kind of operation and the SDL', async () => {
  const creator = newDid()
  const cases: [string, Record<string, unknown>][] = [
    [INITIATE, { product: productOf(creator) }],
    [STATUS, { token: `pst_test_${'a'.repeat(43)}` }],
    [CHECKOUT, { browserToken: `cko_test_${'a'.repeat(43)}` }],
    ['{ _service { sdl } }', {}],
  ]
  for (const [query, variables] of cases) {
    expectRefused(await post(query, variables), 'missing')
    expectRefused(await post(query, variables, signedContext(testCallerKeys(), { kind: 'operator', id: 'x' })), 'bad-signature')
    expectRefused(await post(query, variables, signedContext(keys, { kind: 'operator', id: 'x' }, { now: Date.now() - 3600_000 })), 'expired')
    expectRefused(await post(query, variables, 'garbage'), 'malformed')
  }
  expect(await payments.models.Checkout.countDocuments({})).toBe(0)
})

test('the whole journey with the right principals: page and pay (checkout), status (app), record (operator)', async () => {
  // the app's own sale: paying a creator's checkout reads the creator's approval again, through the gateway, which
  // this test does not run (settlement.test.ts and test/e2e/adapter/payments.test.ts test that read)
  const creator = APP
  const { token, url, checkoutId } = await seedCheckout(creator)
  expect(url.startsWith('http://127.0.0.1:9/checkout/cko_test_')).toBe(true)
  const browserToken = url.slice(url.lastIndexOf('/') + 1)

  const page = await post(CHECKOUT, { browserToken }, checkoutPage())
  expect(page.body.data.checkout).toMatchObject({ id: checkoutId, status: 'pending', recipientName: 'Ada', amount: 1000, serviceFee: 55, buyerFee: 0, total: 1000, ref: null })

  const bad = await post(PAY, { browserToken, card: { number: '4242', expMonth: 12, expYear: 2099, cvc: '123' } }, checkoutPage())
  expect(codeOf(bad)).toBe('InvalidRequest')

  const paid = await post(PAY, { browserToken, card: { number: '4242 4242 4242 4242', expMonth: 12, expYear: new Date().getUTCFullYear() + 1, cvc: '123', name: null } }, checkoutPage())
  expect(paid.body.data.payCheckout.status).toBe('completed')
  const ref = paid.body.data.payCheckout.ref

  const status = await post(STATUS, { token }, app())
  expect(status.body).toEqual({ data: { paymentStatus: { status: 'completed', ref } } })

  const again = await post(PAY, { browserToken, card: { number: '4242424242424242', expMonth: 12, expYear: 2099, cvc: '123' } }, checkoutPage())
  expect(codeOf(again)).toBe('CheckoutClosed')
  expect(again.body.errors?.[0]?.extensions?.http).toEqual({ status: 409 })

  const record = await post(RECORD, { uri: ref.uri }, operator())
  expect(record.body.data.paymentRecord).toEqual({ uri: ref.uri, cid: ref.cid, app: APP, recipient: creator, amount: 1000, total: 1000, processor: 'test', proof: { status: 'pending' } })
  // operators may read status and the checkout
  expect((await post(STATUS, { token }, operator())).body.data.paymentStatus.status).toBe('completed')
  expect((await post(CHECKOUT, { browserToken }, operator())).body.data.checkout.status).toBe('completed')
})

test('wrong principals → NotAllowed; another app’s status → AppUnauthorized', async () => {
  const creator = newDid()
  const { token, url } = await seedCheckout(creator)
  const browserToken = url.slice(url.lastIndexOf('/') + 1)
  const card = { number: '4242424242424242', expMonth: 12, expYear: 2099, cvc: '123' }

  for (const who of [checkoutPage(), operator(), signed({ kind: 'service', name: 'xrpc-adapter' })]) {
    expect(codeOf(await post(INITIATE, { product: productOf(creator) }, who))).toBe('NotAllowed')
  }
  for (const who of [app(), signed({ kind: 'service', name: 'xrpc-adapter' })]) {
    expect(codeOf(await post(CHECKOUT, { browserToken }, who))).toBe('NotAllowed')
  }
  for (const who of [app(), operator(), signed({ kind: 'service', name: 'xrpc-adapter' })]) {
    expect(codeOf(await post(PAY, { browserToken, card }, who))).toBe('NotAllowed')
    expect(codeOf(await post(CANCEL, { browserToken }, who))).toBe('NotAllowed')
  }
  expect(codeOf(await post(STATUS, { token }, checkoutPage()))).toBe('NotAllowed')
  expect(codeOf(await post(STATUS, { token }, signed({ kind: 'dashboard', actorDid: creator, environment: 'test', sessionId: 's' })))).toBe('NotAllowed')
  expect(codeOf(await post(STATUS, { token }, app('did:web:someone-else.example.com')))).toBe('AppUnauthorized')
  expect(codeOf(await post(RECORD, { uri: 'at://did:web:svc.test/money.svc.payment.record/3labc' }, app()))).toBe('NotAllowed')
  // none of these touched the checkout
  expect((await post(STATUS, { token }, app())).body.data.paymentStatus.status).toBe('pending')
})

test("an app's initiate when the facts it decides on cannot be read (no gateway here) → ServiceUnavailable, nothing written", async () => {
  const creator = newDid()
  const res = await post(INITIATE, { product: productOf(creator) }, app())
  expect(codeOf(res)).toBe('ServiceUnavailable')
  expect(await payments.models.Checkout.countDocuments({ recipientDid: creator })).toBe(0)
})

test('mid-rotation (a previous gateway key configured): contexts signed with the old or the new key pass, any other key is refused', async () => {
  const newGatewayKey = randomBytes(32).toString('hex')
  const rotating = { ...keys, gateway: newGatewayKey, previous: { gateway: keys.gateway } }
  const rotated = await startSubgraph('payments_subgraph_context_rotation', rotating)
  try {
    const call = async (context: string) => {
      const res = await fetch(rotated.url, { method: 'POST', headers: { 'content-type': 'application/json', [CONTEXT_HEADER]: context }, body: JSON.stringify({ query: '{ _service { sdl } }' }) })
      return res.status
    }
    const operatorBy = (k: typeof keys) => signedContext(k, { kind: 'operator', id: 'ops' })
    expect(await call(operatorBy(keys))).toBe(200)
    expect(await call(operatorBy({ ...keys, gateway: newGatewayKey }))).toBe(200)
    expect(await call(operatorBy({ ...keys, gateway: randomBytes(32).toString('hex') }))).toBe(401)
  } finally {
    await rotated.models.Checkout.db.dropDatabase().catch(() => undefined)
    await rotated.stop()
  }
})
