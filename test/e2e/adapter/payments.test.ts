/**
 * network.svc.payment.initiate and network.svc.payment.status through the whole stack (adapter → gateway →
 * apps, actors and payments subgraphs → FerretDB), with the hosted checkout's form posts standing in for the
 * buyer's browser (checkout-browser.test.ts drives a real Chromium). Every contract error, the order-id
 * idempotency under parallel duplicates, the two distinct token capabilities, expiry, live refusal, and app and
 * environment isolation.
 */
import { createHash } from 'node:crypto'
import { cidForCbor } from '@atproto/common'
import { chargeKeyOf } from '@svc/payments'
import { MAX_PRODUCT_LENGTH } from '@svc/checkout-product'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectError, expectOk, httpRequest } from './helpers'
import { approvedCreator, decide, initiate, payByForm, paymentStatus, product, requestApproval } from './payment-helpers'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('payments')
})
afterAll(async () => {
  await stack.stop()
})

const checkouts = () => stack.payments.Checkout

describe('initiate', () => {
  it('returns a status token and a browser URL on the checkout host, distinct capabilities stored only as hashes', async () => {
    const app = await stack.newApp()
    const { did } = await approvedCreator(stack, app)
    const body = expectOk(await initiate(stack, app, product(did)))
    expect(Object.keys(body).sort()).toEqual(['token', 'url'])
    expect(body.token).toMatch(/^pst_test_[A-Za-z0-9_-]{43}$/)
    expect(body.url).toMatch(new RegExp(`^${stack.checkoutUrl}/checkout/cko_test_[A-Za-z0-9_-]{43}$`))
    const browserToken = body.url.split('/').pop()
    const stored = JSON.stringify(await checkouts().find({ appDid: app.did }).lean())
    expect(stored).not.toContain(body.token)
    expect(stored).not.toContain(browserToken)
    expect(stored).toContain(createHash('sha256').update(body.token).digest('hex'))
    // the browser token is not a status token, and the status token does not open the page
    expectError(await paymentStatus(stack, app, browserToken), 400, 'InvalidToken')
    expect((await httpRequest(`${stack.checkoutUrl}/checkout/${body.token}`)).status).toBe(404)
    expect(expectOk(await paymentStatus(stack, app, body.token))).toEqual({ status: 'pending' })
  })

  it('an app selling for itself needs no approval', async () => {
    const app = await stack.newApp()
    expect(expectOk(await initiate(stack, app, product(app.did, { paymentType: 'shop' }))).token).toMatch(/^pst_test_/)
  })

  it.each([
    ['a product without the version prefix', 'svc.checkout.v0:e30'],
    ['a product that is not base64url JSON', 'svc.checkout.v1:%%%'],
    ['a product with an unknown field', `svc.checkout.v1:${Buffer.from(JSON.stringify({ recipientDid: 'did:plc:x', extra: 1 })).toString('base64url')}`],
  ])('InvalidProduct for %s, and nothing is stored', async (_label, bad) => {
    const app = await stack.newApp()
    expectError(await initiate(stack, app, bad), 400, 'InvalidProduct')
    expect(await checkouts().countDocuments({ appDid: app.did })).toBe(0)
  })

  it('subscription products are refused until billing exists; ticket products come from a hold (tickets.svc.createTicketHold)', async () => {
    const app = await stack.newApp()
    expectError(await initiate(stack, app, product(app.did, { paymentType: 'subscription', cadence: 'month' })), 400, 'InvalidProduct', /not available yet/)
    expectError(await initiate(stack, app, product(app.did, { paymentType: 'ticket', holdId: 'hold_abc' })), 400, 'InvalidProduct', /createTicketHold/)
    expect(await checkouts().countDocuments({ appDid: app.did })).toBe(0)
  })

  it('refuses any body field beside product', async () => {
    const app = await stack.newApp()
    expectError(await initiate(stack, app, product(app.did), { amount: 1 }), 400, 'InvalidRequest')
  })

  it('InvalidProduct when an app configured for test and live does not name the environment in the product', async () => {
    const app = await stack.newApp({ environments: ['test', 'live'] })
    expectError(await initiate(stack, app, product(app.did)), 400, 'InvalidProduct', /environment/)
    expect(expectOk(await initiate(stack, app, product(app.did, { environment: 'test' }))).token).toMatch(/^pst_test_/)
  })

  it('AppUnauthorized without an approval, with a pending one, and for a payment type outside the approved scope', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
    expectError(await initiate(stack, app, product(creator.did)), 403, 'AppUnauthorized')
    expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'] }))
    expectError(await initiate(stack, app, product(creator.did)), 403, 'AppUnauthorized')
    const approved = await approvedCreator(stack, app, { paymentTypes: ['tip'] })
    expectError(await initiate(stack, app, product(approved.did, { paymentType: 'shop' })), 403, 'AppUnauthorized')
    expect(await checkouts().countDocuments({ appDid: app.did })).toBe(0)
  })

  it('AppUnauthorized for an app that is not registered', async () => {
    const stranger = await stack.newApp({ environments: [] })
    expectError(await initiate(stack, stranger, product(stranger.did)), 403, 'AppUnauthorized')
  })

  it('RecipientNotPayable when the approved creator cannot receive payments', async () => {
    const app = await stack.newApp()
    const { did } = await approvedCreator(stack, app, { payoutStatus: 'pending-verification' })
    expectError(await initiate(stack, app, product(did)), 400, 'RecipientNotPayable')
    expect(await checkouts().countDocuments({ appDid: app.did })).toBe(0)
  })

  it('an approval another app holds does not authorize this app', async () => {
    const holder = await stack.newApp()
    const other = await stack.newApp()
    const { did } = await approvedCreator(stack, holder)
    expectError(await initiate(stack, other, product(did)), 403, 'AppUnauthorized')
  })

  it('live is refused clearly until a live processor is configured', async () => {
    const app = await stack.newApp({ environments: ['live'] })
    expectError(await initiate(stack, app, product(app.did)), 403, 'ProcessorNotConfigured', /processor/)
  })

  it('one order id, one attempt: 20 parallel duplicates get the same token and URL and store one checkout', async () => {
    const app = await stack.newApp()
    const { did } = await approvedCreator(stack, app)
    const p = product(did, { appOrderId: 'order-parallel-1' })
    const results = await Promise.all(Array.from({ length: 20 }, () => initiate(stack, app, p)))
    const bodies = results.map(expectOk)
    expect(new Set(bodies.map((b) => b.token)).size).toBe(1)
    expect(new Set(bodies.map((b) => b.url)).size).toBe(1)
    expect(await checkouts().countDocuments({ appDid: app.did, appOrderId: 'order-parallel-1' })).toBe(1)
  })

  it('a product at the length limit that leaves the environment to the app is started, and its repeat finds its checkout', async () => {
    const app = await stack.newApp()
    const { did } = await approvedCreator(stack, app)
    // the longest URLs the product string takes: naming the environment would make it 28 characters too long
    let longest = ''
    for (let n = 1000; ; n++) {
      try {
        const q = 'a'.repeat(n)
        longest = product(did, { appOrderId: 'order-longest', returnUrl: `https://app.example.com/thanks?q=${q}`, cancelUrl: `https://app.example.com/cancel?q=${q}` })
      } catch {
        break
      }
    }
    expect(longest.length).toBeGreaterThan(MAX_PRODUCT_LENGTH - 28)
    // before, 500 InternalServerError on every try: the purchase's key was the product string with its environment
    const first = expectOk(await initiate(stack, app, longest))
    expect(expectOk(await initiate(stack, app, longest)).token).toBe(first.token)
  })

  it('a different product under a used order id is refused; the same order id of another app is its own', async () => {
    const app = await stack.newApp()
    const { did } = await approvedCreator(stack, app)
    const first = expectOk(await initiate(stack, app, product(did, { appOrderId: 'order-7', amount: 500 })))
    expectError(await initiate(stack, app, product(did, { appOrderId: 'order-7', amount: 900 })), 400, 'InvalidProduct', /order-7/)
    expect(expectOk(await initiate(stack, app, product(did, { appOrderId: 'order-7', amount: 500 }))).token).toBe(first.token)
    const other = await stack.newApp()
    expect(expectOk(await initiate(stack, other, product(other.did, { appOrderId: 'order-7' }))).token).not.toBe(first.token)
  })
})

describe('status', () => {
  let app: TestApp
  beforeAll(async () => {
    app = await stack.newApp()
  })

  it('MissingToken, InvalidToken, NotFound', async () => {
    expectError(await paymentStatus(stack, app, undefined), 400, 'MissingToken')
    expectError(await paymentStatus(stack, app, ''), 400, 'MissingToken')
    expectError(await paymentStatus(stack, app, 'not-a-token'), 400, 'InvalidToken')
    expectError(await paymentStatus(stack, app, `pst_test_${'A'.repeat(43)}`), 404, 'NotFound')
  })

  it('AppUnauthorized, not NotFound, for a DID that is no app in the token\'s environment', async () => {
    const stranger = await stack.newApp({ environments: [] })
    expectError(await paymentStatus(stack, stranger, `pst_test_${'A'.repeat(43)}`), 403, 'AppUnauthorized')
    // an app configured in live only polls no test payment
    const liveOnly = await stack.newApp({ environments: ['live'] })
    expectError(await paymentStatus(stack, liveOnly, `pst_test_${'A'.repeat(43)}`), 403, 'AppUnauthorized')
    expectError(await paymentStatus(stack, liveOnly, `pst_live_${'A'.repeat(43)}`), 404, 'NotFound')
  })

  it("AppUnauthorized for another app's token", async () => {
    const { token } = expectOk(await initiate(stack, app, product(app.did)))
    const other = await stack.newApp()
    expectError(await paymentStatus(stack, other, token), 403, 'AppUnauthorized')
  })

  it('completed with the record reference after a test-card payment; the CID is the DAG-CBOR CID of the record', async () => {
    const { did } = await approvedCreator(stack, app)
    const { token, url } = expectOk(await initiate(stack, app, product(did, { amount: 1234, appOrderId: 'order-paid-1' })))
    const paid = await payByForm(url, '4242 4242 4242 4242')
    expect(paid.status).toBe(303)
    expect(paid.headers.get('location')).toBe('https://app.example.com/thanks?svc_checkout=completed')
    const body = expectOk(await paymentStatus(stack, app, token))
    expect(body).toEqual({ status: 'completed', ref: { uri: expect.stringMatching(/^at:\/\/did:web:svc\.test\/money\.svc\.payment\.record\/[a-z2-7]{13}$/), cid: expect.stringMatching(/^bafyrei/) } })
    const record = await stack.payments.PaymentRecord.findOne({ uri: body.ref.uri }).lean()
    expect(record).toBeTruthy()
    const content = JSON.parse(record!.recordJson) as Record<string, unknown>
    expect((await cidForCbor(content)).toString()).toBe(body.ref.cid)
    expect(content).toMatchObject({ $type: 'money.svc.payment.record', recipient: did, amount: 1234, currency: 'usd' })
    // exactly one payment.completed event in the payments outbox
    const events = await stack.payments.Outbox.find({ type: 'payment.completed', appDid: app.did, 'data.appOrderId': 'order-paid-1' }).lean()
    expect(events).toHaveLength(1)
    expect(events[0]!.data).toMatchObject({ paymentUri: body.ref.uri, cid: body.ref.cid, amount: 1234 })
    // single use: paying again charges nothing and changes nothing
    expect((await payByForm(url, '4242424242424242')).status).toBe(409)
    expect(expectOk(await paymentStatus(stack, app, token))).toEqual(body)
  })

  it('5 parallel pays of one checkout (a double click, a retried form): one charge, one record, one event; the others find it closed', async () => {
    const { did } = await approvedCreator(stack, app)
    const { token, url } = expectOk(await initiate(stack, app, product(did, { amount: 990, appOrderId: 'order-paid-parallel' })))
    const results = await Promise.all(Array.from({ length: 5 }, () => payByForm(url, '4242 4242 4242 4242')))
    expect(results.map((r) => r.status).sort()).toEqual([303, 409, 409, 409, 409])
    expect(results.find((r) => r.status === 303)!.headers.get('location')).toBe('https://app.example.com/thanks?svc_checkout=completed')
    const body = expectOk(await paymentStatus(stack, app, token))
    expect(body.status).toBe('completed')
    const checkout = (await stack.payments.Checkout.findOne({ appDid: app.did, appOrderId: 'order-paid-parallel' }).lean())!
    expect(await stack.payments.Settlement.countDocuments({ _id: checkout._id })).toBe(1)
    expect(await stack.payments.PaymentRecord.countDocuments({ checkoutId: checkout._id })).toBe(1)
    expect(await stack.payments.Outbox.countDocuments({ type: 'payment.completed', appDid: app.did, 'data.appOrderId': 'order-paid-parallel' })).toBe(1)
  })

  it('a checkout started before the creator revoked the approval is refused at pay: failed, nothing charged, no event', async () => {
    const { did, approvalId, cookie } = await approvedCreator(stack, app)
    const { token, url } = expectOk(await initiate(stack, app, product(did, { appOrderId: 'order-revoked-1' })))
    expect((await decide(stack, cookie, approvalId, 'revoke')).status).toBe(303)
    const refused = await payByForm(url, '4242 4242 4242 4242')
    expect(refused.status).toBe(200)
    expect(refused.text).toContain('no longer accepts this payment')
    expect(expectOk(await paymentStatus(stack, app, token))).toEqual({ status: 'failed', failureReason: 'not_authorized' })
    const checkout = await checkouts().findOne({ statusTokenHash: createHash('sha256').update(token).digest('hex') }).lean()
    expect(checkout).toMatchObject({ status: 'failed', failureReason: 'not_authorized' })
    expect(await stack.payments.TestCharge.countDocuments({ _id: chargeKeyOf(checkout!._id) })).toBe(0)
    expect(await stack.payments.Outbox.countDocuments({ type: 'payment.completed', appDid: app.did, 'data.appOrderId': 'order-revoked-1' })).toBe(0)
  })

  it('a checkout started before a revoke stays refused after the app asks again and the creator approves again', async () => {
    const { did, approvalId, cookie } = await approvedCreator(stack, app)
    const { token, url } = expectOk(await initiate(stack, app, product(did, { appOrderId: 'order-regranted-1' })))
    expect((await decide(stack, cookie, approvalId, 'revoke')).status).toBe(303)
    // the same request asked again and approved again: the same id, a new grant
    expect(expectOk(await requestApproval(stack, app, { recipientDid: did, environment: 'test', paymentTypes: ['tip', 'shop'] }))).toMatchObject({ id: approvalId, status: 'pending' })
    expect((await decide(stack, cookie, approvalId, 'accept')).status).toBe(303)
    const refused = await payByForm(url, '4242 4242 4242 4242')
    expect(refused.status).toBe(200)
    expect(refused.text).toContain('no longer accepts this payment')
    expect(expectOk(await paymentStatus(stack, app, token))).toEqual({ status: 'failed', failureReason: 'not_authorized' })
    const checkout = await checkouts().findOne({ appDid: app.did, appOrderId: 'order-regranted-1' }).lean()
    expect(checkout).toMatchObject({ status: 'failed', failureReason: 'not_authorized' })
    expect(await stack.payments.TestCharge.countDocuments({ _id: chargeKeyOf(checkout!._id) })).toBe(0)
    // a checkout started under the new grant is paid
    const fresh = expectOk(await initiate(stack, app, product(did)))
    expect((await payByForm(fresh.url, '4242 4242 4242 4242')).status).toBe(303)
  })

  it('failed after a declined card, with no record', async () => {
    const { token, url } = expectOk(await initiate(stack, app, product(app.did)))
    const declined = await payByForm(url, '4000 0000 0000 0002')
    expect(declined.status).toBe(200)
    expect(declined.text).toMatch(/declined/i)
    // the app can tell its buyer why: declined, not expired
    expect(expectOk(await paymentStatus(stack, app, token))).toEqual({ status: 'failed', failureReason: 'declined' })
  })

  it('an abandoned checkout fails as expired, so polling ends', async () => {
    const { token, url } = expectOk(await initiate(stack, app, product(app.did)))
    await checkouts().updateOne({ statusTokenHash: createHash('sha256').update(token).digest('hex') }, { $set: { expiresAt: new Date(Date.now() - 1000) } })
    expect(expectOk(await paymentStatus(stack, app, token))).toEqual({ status: 'failed', failureReason: 'expired' })
    expect((await payByForm(url, '4242424242424242')).status).toBe(409)
  })

  it('a checkout lives in one environment: its token names it, and the same app in live has none of it', async () => {
    const both = await stack.newApp({ environments: ['test', 'live'] })
    const { token } = expectOk(await initiate(stack, both, product(both.did, { environment: 'test' })))
    expect(token.startsWith('pst_test_')).toBe(true)
    expect(await checkouts().countDocuments({ appDid: both.did, environment: 'test' })).toBe(1)
    expect(await checkouts().countDocuments({ appDid: both.did, environment: 'live' })).toBe(0)
  })
})
