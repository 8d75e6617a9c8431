/**
 * network.svc.payment.initiate and status, on the test FerretDB: the rules and their order, order-id idempotency
 * (also with concurrent duplicates), the tokens (the database holds none), and the status lookup's errors.
 */
import { createHash } from 'node:crypto'
import { PRODUCT_PREFIX } from '@svc/checkout-product'
import { getCheckout, getPaymentStatus, hashToken, initiateCheckout, STATUS_TOKEN_RE, BROWSER_TOKEN_RE } from '../src'
import { authorizationFor, browserTokenOf, CHECKOUT_URL, expectCode, newDid, newOrderId, openDomain, productOf, type TestDomain, serving } from './helpers'

let t: TestDomain
const fieldsOf = (product: string) => JSON.parse(Buffer.from(product.slice(PRODUCT_PREFIX.length), 'base64url').toString()) as Record<string, unknown>
const rawProduct = (fields: Record<string, unknown>) => PRODUCT_PREFIX + Buffer.from(JSON.stringify(fields)).toString('base64url')
const APP = 'did:web:shop-app.example.com'

beforeAll(async () => {
  t = await openDomain('payments_initiate')
})

afterAll(async () => {
  await t?.close()
})

describe('the rules, in order', () => {
  test('a product that does not parse → InvalidProduct with the parser’s reason (before anything else)', async () => {
    const creator = newDid()
    await expectCode(initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator, { approval: null }) }), { appDid: APP, product: 'not a product' }), 'InvalidProduct', /svc\.checkout\.v1:/)
    await expectCode(
      initiateCheckout(serving(t.domain, { checkout: { ...authorizationFor(creator), environment: 'live' } }), { appDid: APP, product: rawProduct({ ...fieldsOf(productOf(creator)), amount: 0 }) }),
      'InvalidProduct',
      /amount must be at least 1/,
    )
  })

  test('a product naming another environment than the resolved one → InvalidProduct', async () => {
    const creator = newDid()
    await expectCode(
      initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator, { environment: 'live' }) }),
      'InvalidProduct',
      /for live, but this checkout is in test/,
    )
  })

  test('live → ProcessorNotConfigured, before the approval is looked at', async () => {
    const creator = newDid()
    await expectCode(
      initiateCheckout(serving(t.domain, { checkout: { ...authorizationFor(creator, { approval: null }), environment: 'live' } }), { appDid: APP, product: productOf(creator, { environment: 'live' }) }),
      'ProcessorNotConfigured',
      /live checkouts need a live payment processor; none is configured/,
    )
  })

  test('no approval, an approval not approved, or not for this payment type → AppUnauthorized, saying which', async () => {
    const creator = newDid()
    const product = productOf(creator)
    await expectCode(initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator, { approval: null }) }), { appDid: APP, product }), 'AppUnauthorized', /has not approved this app/)
    await expectCode(
      initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator, { approval: { id: 'apr_1', revision: 1, status: 'pending', paymentTypes: ['tip'], feeShareBps: 0 } }) }), { appDid: APP, product }),
      'AppUnauthorized',
      /is pending, not approved/,
    )
    await expectCode(
      initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator, { approval: { id: 'apr_1', revision: 1, status: 'approved', paymentTypes: ['shop'], feeShareBps: 0 } }) }), { appDid: APP, product }),
      'AppUnauthorized',
      /approved this app for shop payments, not tip/,
    )
    // approval comes before payout readiness
    await expectCode(initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator, { approval: null, recipient: null }) }), { appDid: APP, product }), 'AppUnauthorized')
  })

  test('an unknown or unpayable recipient → RecipientNotPayable', async () => {
    const creator = newDid()
    const product = productOf(creator)
    await expectCode(initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator, { recipient: null }) }), { appDid: APP, product }), 'RecipientNotPayable', /unknown in test/)
    await expectCode(
      initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator, { recipient: { did: creator, displayName: null, payable: false, payoutStatus: 'onboarding-required', paymentTypes: ['tip', 'shop'] } }) }), { appDid: APP, product }),
      'RecipientNotPayable',
      /onboarding-required/,
    )
  })

  test('a recipient whose profile does not accept the payment type → RecipientNotPayable, even with the app approved for it', async () => {
    const creator = newDid()
    const shopOnly = authorizationFor(creator, { recipient: { did: creator, displayName: null, payable: true, payoutStatus: 'ready', paymentTypes: ['shop'] } })
    await expectCode(initiateCheckout(serving(t.domain, { checkout: shopOnly }), { appDid: APP, product: productOf(creator, { paymentType: 'tip' }) }), 'RecipientNotPayable', /accepts shop payments, not tip/)
    expect(await t.models.Checkout.countDocuments({ recipientDid: creator })).toBe(0)
  })

  test('fees above the amount → InvalidProduct', async () => {
    const creator = newDid()
    await expectCode(initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator, { amount: 30 }) }), 'InvalidProduct', /amount too small to cover fees/)
  })

  test('nothing is written by a refused initiate', async () => {
    expect(await t.models.Checkout.countDocuments({ appDid: APP })).toBe(0)
  })

  test('an app selling for itself needs no approval and no recipient facts, and takes no app fee', async () => {
    const started = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(APP, { approval: null, recipient: null }) }), { appDid: APP, product: productOf(APP, { paymentType: 'shop' }) })
    const doc = await t.models.Checkout.findById(started.checkoutId).lean()
    expect(doc).toMatchObject({ selfSale: true, appFee: 0, feeShareBps: 0, approvalId: null, recipientName: null, serviceFee: 55, total: 1000, recipientNet: 945 })
  })
})

describe('a started checkout', () => {
  test('tokens of the right form; the browser URL on the checkout host; snapshots of the money and the recipient', async () => {
    const creator = newDid()
    const auth = authorizationFor(creator, { serviceFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: true } })
    const started = await initiateCheckout(serving(t.domain, { checkout: auth }), { appDid: APP, product: productOf(creator, { amount: 2000 }) })
    expect(started.token).toMatch(STATUS_TOKEN_RE)
    expect(started.token.startsWith('pst_test_')).toBe(true)
    expect(started.url).toMatch(new RegExp(`^${CHECKOUT_URL}/checkout/cko_test_[A-Za-z0-9_-]{43}$`))
    expect(browserTokenOf(started.url)).toMatch(BROWSER_TOKEN_RE)
    expect(started.checkoutId).toMatch(/^chk_[0-9a-f]{24}$/)

    const view = await getCheckout(t.domain, browserTokenOf(started.url))
    expect(view).toMatchObject({
      id: started.checkoutId,
      environment: 'test',
      status: 'pending',
      failureReason: null,
      recipientDid: creator,
      recipientName: 'Ada Creator',
      paymentType: 'tip',
      currency: 'usd',
      amount: 2000,
      serviceFee: 80, // 50 + 30
      buyerFee: 80,
      total: 2080,
      ref: null,
    })
    expect(new Date(view.expiresAt).getTime()).toBe(t.clock.now.getTime() + 24 * 3600 * 1000)
    const doc = await t.models.Checkout.findById(started.checkoutId).lean()
    expect(doc).toMatchObject({ appFee: 100, recipientNet: 1900, feeShareBps: 500, approvalId: 'apr_test', approvalRevision: 1 })
  })

  test('the database holds only hashes of the tokens', async () => {
    const creator = newDid()
    const started = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator) })
    const raw = await t.conn.db!.collection('checkouts').findOne({ _id: started.checkoutId as never })
    const text = JSON.stringify(raw)
    expect(text).not.toContain(started.token)
    expect(text).not.toContain(started.token.slice(9))
    expect(text).not.toContain(browserTokenOf(started.url).slice(9))
    expect(raw).toMatchObject({ statusTokenHash: hashToken(started.token), browserTokenHash: hashToken(browserTokenOf(started.url)) })
  })
})

describe('idempotency by app order id', () => {
  test('a repeat with the same product returns the same token and url', async () => {
    const creator = newDid()
    const product = productOf(creator)
    const first = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product })
    const again = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product })
    expect(again).toEqual(first)
  })

  test('a repeat after the rates changed so that they would refuse the amount gets the checkout started under the old ones; a new order is refused', async () => {
    const creator = newDid()
    const passed = authorizationFor(creator, { serviceFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: true } })
    const product = productOf(creator, { amount: 30 })
    const first = await initiateCheckout(serving(t.domain, { checkout: passed }), { appDid: APP, product })
    // the app stops passing the fee to the buyer: 30 no longer covers it (a 31 service fee)
    const kept = authorizationFor(creator)
    expect(await initiateCheckout(serving(t.domain, { checkout: kept }), { appDid: APP, product })).toEqual(first)
    await expectCode(initiateCheckout(serving(t.domain, { checkout: kept }), { appDid: APP, product: productOf(creator, { amount: 30 }) }), 'InvalidProduct', /amount too small to cover fees/)
    // another product under that order id is still refused as such
    await expectCode(initiateCheckout(serving(t.domain, { checkout: kept }), { appDid: APP, product: productOf(creator, { amount: 31, appOrderId: JSON.parse(Buffer.from(product.slice(PRODUCT_PREFIX.length), 'base64url').toString()).appOrderId }) }), 'InvalidProduct', /amount too small to cover fees/)
  })

  test('naming the resolved environment in the product is the same purchase', async () => {
    const creator = newDid()
    const appOrderId = newOrderId()
    const first = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator, { appOrderId }) })
    const named = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator, { appOrderId, environment: 'test' }) })
    expect(named).toEqual(first)
  })

  test('20 concurrent duplicates: one checkout, one token', async () => {
    const creator = newDid()
    const product = productOf(creator)
    const results = await Promise.all(Array.from({ length: 20 }, () => initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product })))
    expect(new Set(results.map((r) => r.token)).size).toBe(1)
    expect(new Set(results.map((r) => r.url)).size).toBe(1)
    expect(await t.models.Checkout.countDocuments({ recipientDid: creator })).toBe(1)
  })

  test('the same order id with a different product → InvalidProduct; the first checkout is untouched', async () => {
    const creator = newDid()
    const appOrderId = newOrderId()
    const first = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator, { appOrderId }) })
    await expectCode(
      initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator, { appOrderId, amount: 1001 }) }),
      'InvalidProduct',
      new RegExp(`appOrderId ${appOrderId} was already used for a different product`),
    )
    const doc = await t.models.Checkout.findById(first.checkoutId).lean()
    expect(doc?.amount).toBe(1000)
    expect(doc?.productHash).toBe(
      createHash('sha256')
        .update(productOf(creator, { appOrderId, environment: 'test' }))
        .digest('hex'),
    )
  })

  test('concurrent different products under one order id: one wins, the others are InvalidProduct', async () => {
    const creator = newDid()
    const appOrderId = newOrderId()
    const settled = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator, { appOrderId, amount: 1000 + i }) })),
    )
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1)
    for (const s of settled.filter((s) => s.status === 'rejected')) expect((s as PromiseRejectedResult).reason.code).toBe('InvalidProduct')
    expect(await t.models.Checkout.countDocuments({ appDid: APP, appOrderId })).toBe(1)
  })

  test('the order id is per app: another app with the same order id gets its own checkout', async () => {
    const creator = newDid()
    const product = productOf(creator)
    const a = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product })
    const b = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: 'did:web:other-app.example.com', product })
    expect(b.checkoutId).not.toBe(a.checkoutId)
    expect(b.token).not.toBe(a.token)
  })
})

describe('payment status', () => {
  test('pending, with no ref; an operator (appDid null) may read it', async () => {
    const creator = newDid()
    const started = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator) })
    expect(await getPaymentStatus(t.domain, { token: started.token, appDid: APP })).toEqual({ status: 'pending', ref: null, failureReason: null })
    expect(await getPaymentStatus(t.domain, { token: started.token, appDid: null })).toEqual({ status: 'pending', ref: null, failureReason: null })
  })

  test('errors: MissingToken, InvalidToken, NotFound, AppUnauthorized', async () => {
    const creator = newDid()
    const started = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator) })
    await expectCode(getPaymentStatus(t.domain, { token: '', appDid: APP }), 'MissingToken')
    await expectCode(getPaymentStatus(t.domain, { token: undefined, appDid: APP }), 'MissingToken')
    for (const bad of ['garbage', 'pst_test_short', `pst_prod_${'a'.repeat(43)}`, `${started.token}x`, ` ${started.token}`]) {
      await expectCode(getPaymentStatus(t.domain, { token: bad, appDid: APP }), 'InvalidToken')
    }
    // the browser token is another capability: it never answers status
    await expectCode(getPaymentStatus(t.domain, { token: browserTokenOf(started.url), appDid: APP }), 'InvalidToken')
    await expectCode(getPaymentStatus(t.domain, { token: `pst_test_${'A'.repeat(43)}`, appDid: APP }), 'NotFound')
    // a token of the right form made with another secret is unknown
    await expectCode(getPaymentStatus(t.domain, { token: started.token.replace('pst_test_', 'pst_live_'), appDid: APP }), 'NotFound')
    await expectCode(getPaymentStatus(t.domain, { token: started.token, appDid: 'did:web:other-app.example.com' }), 'AppUnauthorized')
  })

  test('the status token never opens the checkout page', async () => {
    const creator = newDid()
    const started = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator) })
    await expectCode(getCheckout(t.domain, started.token), 'InvalidToken')
    await expectCode(getCheckout(t.domain, `cko_test_${'A'.repeat(43)}`), 'NotFound')
  })
})

test('a repeat after the token secret changed is refused (InvalidProduct, not a 500) instead of handing out tokens that do not work', async () => {
  const creator = newDid()
  const product = productOf(creator)
  const first = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product })
  const rotated = { ...t.domain, tokenSecret: 'another-secret-of-at-least-32-characters' }
  await expect(initiateCheckout(serving(rotated, { checkout: authorizationFor(creator) }), { appDid: APP, product })).rejects.toMatchObject({
    code: 'InvalidProduct',
    message: expect.stringMatching(/before the service last changed its token secret/),
  })
  // the token issued before keeps working
  expect((await getPaymentStatus(rotated, { token: first.token, appDid: APP })).status).toBe('pending')
})

test('during a rotation (the earlier secret as previousTokenSecret) a repeat gets the tokens it got before; new checkouts use the new secret', async () => {
  const creator = newDid()
  const product = productOf(creator)
  const first = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product })
  const rotating = { ...t.domain, tokenSecret: 'the-new-secret-of-at-least-32-characters', previousTokenSecret: t.domain.tokenSecret }
  expect(await initiateCheckout(serving(rotating, { checkout: authorizationFor(creator) }), { appDid: APP, product })).toEqual(first)
  expect((await getPaymentStatus(rotating, { token: first.token, appDid: APP })).status).toBe('pending')

  const fresh = productOf(creator)
  const second = await initiateCheckout(serving(rotating, { checkout: authorizationFor(creator) }), { appDid: APP, product: fresh })
  // made with the new secret: once the previous one is dropped, its repeat still gets the same tokens
  const rotated = { ...t.domain, tokenSecret: rotating.tokenSecret, previousTokenSecret: null }
  expect(await initiateCheckout(serving(rotated, { checkout: authorizationFor(creator) }), { appDid: APP, product: fresh })).toEqual(second)
})
