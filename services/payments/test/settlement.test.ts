/**
 * Paying, declining, canceling and expiring checkouts on the test FerretDB: the settlement claim decides once
 * (also under concurrency), the payment record's URI and CID, the outbox event written exactly once, recovery of
 * interrupted settlements, and expiry by the sweep and lazily on reads.
 */
import { cidForCbor, TID } from '@atproto/common'
import pino from 'pino'
import { lexicons } from '@svc/lexicons'
import { outboxEventId } from '@svc/outbox'
import {
  cancelCheckout,
  chargeKeyOf,
  createProcessorRegistry,
  finishSettlement,
  getCheckout,
  getPaymentStatus,
  initiateCheckout,
  payCheckout,
  ProcessorRegistry,
  recoverCheckout,
  sweepCheckouts,
  TEST_CARDS,
  TestProcessor,
  UNANSWERED_PAYMENT_CLAIM_MS,
  type ChargeRequest,
  type PaymentProcessor,
  type SweepCursor,
} from '../src'
import { claimSettlement, expireCheckout, recordOutcome } from '../src/domain/settlement'
import { FAILURE_REASONS } from '../src/models'
import { authorizationFor, browserTokenOf, DECLINED_CARD, expectCode, GOOD_CARD, newDid, openDomain, productOf, SERVICE_DID, type TestDomain, serving } from './helpers'

/** The test processor (its ledger in the test's database), counting its charges. */
class CountingProcessor implements PaymentProcessor {
  readonly name = 'test'
  readonly charges: ChargeRequest[] = []
  inner!: TestProcessor
  delayMs = 0
  async charge(req: ChargeRequest) {
    this.charges.push(req)
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs))
    return this.inner.charge(req)
  }
  resolveCharge(idempotencyKey: string) {
    return this.inner.resolveCharge(idempotencyKey)
  }
}

let t: TestDomain
const processor = new CountingProcessor()
const APP = 'did:web:settle-app.example.com'

beforeAll(async () => {
  t = await openDomain('payments_settlement', { processors: new ProcessorRegistry({ test: processor, live: null }) })
  processor.inner = new TestProcessor(t.models.TestCharge)
})

afterAll(async () => {
  await t?.close()
})

async function start(fields: Parameters<typeof productOf>[1] = {}) {
  const creator = newDid()
  const started = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator, { serviceFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: true } }) }), { appDid: APP, product: productOf(creator, fields) })
  return { ...started, creator, browser: browserTokenOf(started.url) }
}

/** a 4242 charge of a checkout, as its pay sends it */
const chargeRequest = (checkoutId: string): ChargeRequest => ({
  checkoutId,
  amount: 1055,
  currency: 'usd',
  card: { number: TEST_CARDS.succeeds, expMonth: 12, expYear: 2099, cvc: '123', name: null },
  idempotencyKey: chargeKeyOf(checkoutId),
})
const chargesOf = (checkoutId: string) => processor.charges.filter((c) => c.checkoutId === checkoutId).length

describe('paying', () => {
  test('4242… → completed, with the payment record (URI, DAG-CBOR CID) and one outbox event', async () => {
    const c = await start({ amount: 1000, paymentType: 'tip' })
    const view = await payCheckout(t.domain, c.browser, GOOD_CARD)
    expect(view).toMatchObject({ id: c.checkoutId, status: 'completed', failureReason: null, total: 1055, buyerFee: 55 })
    expect(view.ref?.uri).toMatch(new RegExp(`^at://${SERVICE_DID}/money\\.svc\\.payment\\.record/[a-z2-7]{13}$`))
    expect(chargesOf(c.checkoutId)).toBe(1)
    expect(processor.charges.at(-1)).toMatchObject({ amount: 1055, currency: 'usd', idempotencyKey: `checkout:${c.checkoutId}` })

    // the status token now answers completed with the same ref
    expect(await getPaymentStatus(t.domain, { token: c.token, appDid: APP })).toEqual({ status: 'completed', ref: view.ref, failureReason: null })

    // the record: its CID is the CID of its DAG-CBOR encoding
    const stored = await t.models.PaymentRecord.findOne({ checkoutId: c.checkoutId }).lean()
    expect(stored).toMatchObject({ uri: view.ref!.uri, cid: view.ref!.cid, environment: 'test', appDid: APP, recipientDid: c.creator })
    const record = JSON.parse(stored!.recordJson)
    const settlement = await t.models.Settlement.findById(c.checkoutId).lean()
    expect(record).toEqual({
      $type: 'money.svc.payment.record',
      app: APP,
      recipient: c.creator,
      paymentType: 'tip',
      amount: 1000,
      currency: 'usd',
      serviceFee: 55,
      buyerFee: 55,
      appFee: 50,
      total: 1055,
      appOrderId: expect.any(String),
      processor: 'test',
      environment: 'test',
      createdAt: settlement!.settledAt!.toISOString(),
    })
    const cid = await cidForCbor(record)
    expect(cid.toString()).toBe(view.ref!.cid)
    expect(cid.version).toBe(1)
    expect(cid.code).toBe(0x71) // dag-cbor
    expect(cid.multihash.code).toBe(0x12) // sha2-256
    expect(view.ref!.uri.endsWith(`/${settlement!.recordTid}`)).toBe(true)

    // exactly one event, even when finishSettlement runs again (also concurrently)
    await finishSettlement(t.domain, c.checkoutId)
    await Promise.all([finishSettlement(t.domain, c.checkoutId), finishSettlement(t.domain, c.checkoutId)])
    const events = await t.models.Outbox.find({ key: `payment.completed:${c.checkoutId}` }).lean()
    expect(events).toHaveLength(1)
    expect(events[0]).toMatchObject({
      type: 'payment.completed',
      environment: 'test',
      appDid: APP,
      data: {
        paymentUri: view.ref!.uri,
        cid: view.ref!.cid,
        appOrderId: record.appOrderId,
        recipientDid: c.creator,
        paymentType: 'tip',
        amount: 1000,
        currency: 'usd',
        buyerFee: 55,
        total: 1055,
        serviceFee: 55,
        appFee: 50,
        completedAt: record.createdAt,
      },
    })
    // no token in the event
    const eventText = JSON.stringify(events[0])
    expect(eventText).not.toContain(c.token.slice(9))
    expect(eventText).not.toContain(c.browser.slice(9))
    expect(await t.models.PaymentRecord.countDocuments({ checkoutId: c.checkoutId })).toBe(1)
  })

  test('single use: a completed checkout shows its state and never charges again', async () => {
    const c = await start()
    await payCheckout(t.domain, c.browser, GOOD_CARD)
    await expectCode(payCheckout(t.domain, c.browser, GOOD_CARD), 'CheckoutClosed', /already paid or closed/)
    await expectCode(cancelCheckout(t.domain, c.browser), 'CheckoutClosed')
    expect(chargesOf(c.checkoutId)).toBe(1)
    expect((await getCheckout(t.domain, c.browser)).status).toBe('completed')
  })

  test('a repeat initiate of a completed order returns the same token, which answers completed', async () => {
    const creator = newDid()
    const product = productOf(creator)
    const auth = authorizationFor(creator)
    const first = await initiateCheckout(serving(t.domain, { checkout: auth }), { appDid: APP, product })
    await payCheckout(t.domain, browserTokenOf(first.url), GOOD_CARD)
    const again = await initiateCheckout(serving(t.domain, { checkout: auth }), { appDid: APP, product })
    expect(again).toEqual(first)
    expect((await getPaymentStatus(t.domain, { token: again.token, appDid: APP })).status).toBe('completed')
  })

  test('a bad card form → InvalidRequest, nothing claimed, and the checkout stays payable', async () => {
    const c = await start()
    await expectCode(payCheckout(t.domain, c.browser, { ...GOOD_CARD, number: '4242 4242 4242 4241' }), 'InvalidRequest', /card number is invalid/)
    await expectCode(payCheckout(t.domain, c.browser, { ...GOOD_CARD, expYear: 2020 }), 'InvalidRequest', /expired/)
    await expectCode(payCheckout(t.domain, c.browser, { ...GOOD_CARD, cvc: 'x' }), 'InvalidRequest', /security code/)
    expect(await t.models.Settlement.countDocuments({ _id: c.checkoutId })).toBe(0)
    expect(chargesOf(c.checkoutId)).toBe(0)
    expect((await payCheckout(t.domain, c.browser, GOOD_CARD)).status).toBe('completed')
  })

  test('a declined card → failed (declined) with the processor’s message; no record, no event; never charged again', async () => {
    const c = await start()
    const view = await payCheckout(t.domain, c.browser, DECLINED_CARD)
    expect(view).toMatchObject({ status: 'failed', failureReason: 'declined', failureMessage: 'Your card was declined.', ref: null })
    expect(await getPaymentStatus(t.domain, { token: c.token, appDid: APP })).toEqual({ status: 'failed', ref: null, failureReason: 'declined' })
    expect(await t.models.PaymentRecord.countDocuments({ checkoutId: c.checkoutId })).toBe(0)
    expect(await t.models.Outbox.countDocuments({ key: `payment.completed:${c.checkoutId}` })).toBe(0)
    await expectCode(payCheckout(t.domain, c.browser, GOOD_CARD), 'CheckoutClosed')
    expect(chargesOf(c.checkoutId)).toBe(1)
  })

  test('another Luhn-valid number in test → declined, asking for a test card', async () => {
    const c = await start()
    const view = await payCheckout(t.domain, c.browser, { ...GOOD_CARD, number: '4012 8888 8888 1881' })
    expect(view).toMatchObject({ status: 'failed', failureReason: 'declined', failureMessage: expect.stringMatching(/use a test card number/) })
  })

  test('a processor error → failed (processor_error)', async () => {
    const c = await start()
    const view = await payCheckout(t.domain, c.browser, { ...GOOD_CARD, number: '4000 0000 0000 0119' })
    expect(view).toMatchObject({ status: 'failed', failureReason: 'processor_error' })
  })

  test('a processor that throws or does not answer in time is asked what became of the charge: none → failed (processor_error), no payment made', async () => {
    const broken: PaymentProcessor = { name: 'test', charge: async () => Promise.reject(new Error('socket hang up')), resolveCharge: async () => null }
    const hanging: PaymentProcessor = { name: 'test', charge: () => new Promise(() => undefined), resolveCharge: async () => null }
    for (const p of [broken, hanging]) {
      const domain = { ...t.domain, processors: new ProcessorRegistry({ test: p, live: null }), processorTimeoutMs: 50 }
      const c = await start()
      const view = await payCheckout(domain, c.browser, GOOD_CARD)
      expect(view).toMatchObject({ status: 'failed', failureReason: 'processor_error', failureMessage: expect.stringMatching(/No payment was made/) })
    }
  })

  test('a lost answer whose charge happened → completed; a processor that cannot tell → the checkout stays processing', async () => {
    const lostAnswer: PaymentProcessor = {
      name: 'test',
      charge: async () => Promise.reject(new Error('socket hang up')),
      resolveCharge: async () => ({ ok: true, chargeId: 'ch_lost_answer' }),
    }
    const c = await start()
    const view = await payCheckout({ ...t.domain, processors: new ProcessorRegistry({ test: lostAnswer, live: null }) }, c.browser, GOOD_CARD)
    expect(view).toMatchObject({ status: 'completed', ref: { uri: expect.any(String) } })

    const silent: PaymentProcessor = { name: 'test', charge: () => new Promise(() => undefined), resolveCharge: () => new Promise(() => undefined) }
    const d = await start()
    const waiting = await payCheckout({ ...t.domain, processors: new ProcessorRegistry({ test: silent, live: null }), processorTimeoutMs: 50 }, d.browser, GOOD_CARD)
    expect(waiting).toMatchObject({ status: 'processing', failureReason: null })
  })
})

describe('the authorization read again at pay', () => {
  test.each([
    ['the approval revoked', { approval: { id: 'apr_test', revision: 2, status: 'revoked', paymentTypes: ['tip', 'shop'], feeShareBps: 500 } }, 'approval_ended'],
    ['another approval (asked for again)', { approval: { id: 'apr_other', revision: 1, status: 'approved', paymentTypes: ['tip', 'shop'], feeShareBps: 500 } }, 'approval_ended'],
    ['the approval revoked and approved again', { approval: { id: 'apr_test', revision: 3, status: 'approved', paymentTypes: ['tip', 'shop'], feeShareBps: 500 } }, 'approval_ended'],
    ['tips no longer approved', { approval: { id: 'apr_test', revision: 1, status: 'approved', paymentTypes: ['shop'], feeShareBps: 500 } }, 'payment_type_not_approved'],
    ['a lower fee share accepted', { approval: { id: 'apr_test', revision: 1, status: 'approved', paymentTypes: ['tip', 'shop'], feeShareBps: 300 } }, 'fee_share_lowered'],
    ['a lower cap set by an operator', { feeShareCapBps: 100 }, 'fee_share_lowered'],
    ['the recipient restricted', { recipient: { did: 'x', displayName: null, payable: false, payoutStatus: 'restricted', paymentTypes: ['tip', 'shop'] } }, 'recipient_not_payable'],
    ['tips no longer accepted by the recipient', { recipient: { did: 'x', displayName: null, payable: true, payoutStatus: 'ready', paymentTypes: ['shop'] } }, 'payment_type_not_accepted'],
  ] as const)('%s: the checkout fails as not_authorized, nothing is charged', async (_case, change, code) => {
    const c = await start()
    const before = processor.charges.length
    const now = (recipientDid: string) => ({ ...authorizationFor(recipientDid), ...change }) as ReturnType<typeof authorizationFor>
    const view = await payCheckout(serving(t.domain, { checkout: now }), c.browser, GOOD_CARD)
    expect(view).toMatchObject({ status: 'failed', failureReason: 'not_authorized' })
    expect(processor.charges.length).toBe(before)
    expect(await t.models.Settlement.findById(c.checkoutId).lean()).toMatchObject({ by: 'refusal', outcome: { ok: false, reason: 'not_authorized', code } })
    expect(await getPaymentStatus(t.domain, { token: c.token, appDid: APP })).toEqual({ status: 'failed', ref: null, failureReason: 'not_authorized' })
    await expectCode(payCheckout(t.domain, c.browser, GOOD_CARD), 'CheckoutClosed')
  })

  test('a checkout started before checkouts kept the approval\'s revision is checked on the approval\'s id alone: paid', async () => {
    const c = await start()
    await t.models.Checkout.updateOne({ _id: c.checkoutId }, { $unset: { approvalRevision: 1 } })
    const regranted = (recipientDid: string) => ({ ...authorizationFor(recipientDid), approval: { id: 'apr_test', revision: 3, status: 'approved', paymentTypes: ['tip', 'shop'], feeShareBps: 500 } })
    expect(await payCheckout(serving(t.domain, { checkout: regranted }), c.browser, GOOD_CARD)).toMatchObject({ status: 'completed' })
  })

  test('a refused pay that meets another submission\'s claim, not yet marked, is CheckoutClosed: that payment is under way', async () => {
    const c = await start()
    const doc = (await t.models.Checkout.findById(c.checkoutId).lean())!
    expect(await claimSettlement(t.domain, doc as never, 'payment', { processor: 'test', recordTid: TID.nextStr() })).toBe(true)
    const revoked = (recipientDid: string) => ({ ...authorizationFor(recipientDid), approval: { id: 'apr_test', status: 'revoked', paymentTypes: ['tip', 'shop'], feeShareBps: 500 } }) as ReturnType<typeof authorizationFor>
    await expectCode(payCheckout(serving(t.domain, { checkout: revoked }), c.browser, GOOD_CARD), 'CheckoutClosed')
    expect(await t.models.Settlement.findById(c.checkoutId).lean()).toMatchObject({ by: 'payment' })
  })

  test('an app selling for itself needs no approval: its pay reads none', async () => {
    const started = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(APP) }), { appDid: APP, product: productOf(APP) })
    const noFacts = serving(t.domain, {})
    expect(await payCheckout(noFacts, browserTokenOf(started.url), GOOD_CARD)).toMatchObject({ status: 'completed' })
  })
})

describe('canceling', () => {
  test('the buyer cancels → failed (canceled); then closed', async () => {
    const c = await start()
    const view = await cancelCheckout(t.domain, c.browser)
    expect(view).toMatchObject({ status: 'failed', failureReason: 'canceled', failureMessage: expect.stringMatching(/canceled/) })
    expect(await getPaymentStatus(t.domain, { token: c.token, appDid: APP })).toEqual({ status: 'failed', ref: null, failureReason: 'canceled' })
    await expectCode(cancelCheckout(t.domain, c.browser), 'CheckoutClosed')
    await expectCode(payCheckout(t.domain, c.browser, GOOD_CARD), 'CheckoutClosed')
    expect(chargesOf(c.checkoutId)).toBe(0)
  })

  test('unknown and malformed browser tokens', async () => {
    await expectCode(cancelCheckout(t.domain, `cko_test_${'B'.repeat(43)}`), 'NotFound')
    await expectCode(payCheckout(t.domain, 'nope', GOOD_CARD), 'InvalidToken')
  })
})

describe('one settlement per checkout, under concurrency', () => {
  test('pay and expiry at once: exactly one settlement, and the checkout ends as it says', async () => {
    processor.delayMs = 20
    try {
      for (let i = 0; i < 6; i++) {
        const c = await start()
        const doc = (await t.models.Checkout.findById(c.checkoutId).lean())!
        const [pay, expiry] = await Promise.allSettled([payCheckout(t.domain, c.browser, GOOD_CARD), expireCheckout(t.domain, doc as never)])
        const settlements = await t.models.Settlement.find({ _id: c.checkoutId }).lean()
        expect(settlements).toHaveLength(1)
        const status = await getPaymentStatus(t.domain, { token: c.token, appDid: APP })
        if (settlements[0]!.by === 'payment') {
          expect(pay.status).toBe('fulfilled')
          expect(status.status).toBe('completed')
          expect(chargesOf(c.checkoutId)).toBe(1)
        } else {
          expect(settlements[0]!.by).toBe('expiry')
          expect(expiry.status === 'fulfilled' && expiry.value).toBe('expired')
          expect(pay.status).toBe('rejected')
          expect((pay as PromiseRejectedResult).reason.code).toBe('CheckoutClosed')
          expect(status).toEqual({ status: 'failed', ref: null, failureReason: 'expired' })
          expect(chargesOf(c.checkoutId)).toBe(0)
        }
      }
    } finally {
      processor.delayMs = 0
    }
  })

  test('a cancel cut off after its claim (its checkout left pending) is applied by the next sweep, not at expiry', async () => {
    const c = await start()
    const checkout = (await t.models.Checkout.findById(c.checkoutId).lean())!
    expect(await claimSettlement(t.domain, checkout, 'cancel', { outcome: { ok: false, reason: 'canceled', code: 'canceled', message: 'canceled' } })).toBe(true)
    expect((await getPaymentStatus(t.domain, { token: c.token, appDid: APP })).status).toBe('pending')
    expect((await sweepCheckouts(t.domain)).recovered).toBeGreaterThanOrEqual(1)
    expect(await getPaymentStatus(t.domain, { token: c.token, appDid: APP })).toEqual({ status: 'failed', ref: null, failureReason: 'canceled' })
    expect(await getCheckout(t.domain, c.browser)).toMatchObject({ status: 'failed', failureReason: 'canceled' })
    // applied: the next sweep has nothing left of it
    expect((await t.models.Settlement.findById(c.checkoutId).lean())?.awaiting).toBe(false)
  })

  test("the 'checkout completed' line names the payment.completed event, which leads an operator on to its delivery", async () => {
    const c = await start()
    const lines: Record<string, unknown>[] = []
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) })
    await payCheckout({ ...t.domain, logger }, c.browser, GOOD_CARD)
    const completed = lines.find((l) => l.msg === 'checkout completed')
    const event = (await t.models.Outbox.findOne({ key: `payment.completed:${c.checkoutId}` }).lean())!
    expect(completed).toMatchObject({ checkoutId: c.checkoutId, eventId: event._id })
    expect(event._id).toBe(outboxEventId(`payment.completed:${c.checkoutId}`))
  })

  test('a recovery that finds its checkout already ended by another counts nothing (concurrent sweeps counted each)', async () => {
    const c = await start()
    const checkout = (await t.models.Checkout.findById(c.checkoutId).lean())!
    expect(await claimSettlement(t.domain, checkout, 'cancel', { outcome: { ok: false, reason: 'canceled', code: 'canceled', message: 'canceled' } })).toBe(true)
    expect(await finishSettlement(t.domain, c.checkoutId)).toBe(true)
    // the other sweep read the claim while it was still awaiting
    await t.models.Settlement.updateOne({ _id: c.checkoutId }, { $set: { awaiting: true } })
    expect(await finishSettlement(t.domain, c.checkoutId)).toBe(false)
    expect((await t.models.Settlement.findById(c.checkoutId).lean())?.awaiting).toBe(false)
    expect(await recoverCheckout(t.domain, c.checkoutId)).toBe(false)
    expect(await getCheckout(t.domain, c.browser)).toMatchObject({ status: 'failed', failureReason: 'canceled' })
  })

  test('10 concurrent pays and cancels: one winner, at most one charge, one record at most', async () => {
    const c = await start()
    const attempts = Array.from({ length: 10 }, (_, i) => (i % 3 === 2 ? cancelCheckout(t.domain, c.browser) : payCheckout(t.domain, c.browser, GOOD_CARD)))
    const settled = await Promise.allSettled(attempts)
    const won = settled.filter((s) => s.status === 'fulfilled')
    expect(won).toHaveLength(1)
    for (const s of settled.filter((s) => s.status === 'rejected')) expect((s as PromiseRejectedResult).reason.code).toBe('CheckoutClosed')
    expect(await t.models.Settlement.countDocuments({ _id: c.checkoutId })).toBe(1)
    expect(chargesOf(c.checkoutId)).toBeLessThanOrEqual(1)
    expect(await t.models.PaymentRecord.countDocuments({ checkoutId: c.checkoutId })).toBe(chargesOf(c.checkoutId))
    expect(await t.models.Outbox.countDocuments({ key: `payment.completed:${c.checkoutId}` })).toBe(chargesOf(c.checkoutId))
  })
})

describe('expiry', () => {
  test('the sweep expires pending checkouts past expiresAt (failed, expired) and leaves the others', async () => {
    const due = await start()
    t.clock.advance(60 * 60 * 1000)
    const fresh = await start()
    t.clock.advance(23 * 60 * 60 * 1000 + 1000) // `due` is past 24 h, `fresh` is not
    const result = await sweepCheckouts(t.domain)
    expect(result.expired).toBeGreaterThanOrEqual(1)
    expect(await getPaymentStatus(t.domain, { token: due.token, appDid: APP })).toEqual({ status: 'failed', ref: null, failureReason: 'expired' })
    expect(await getCheckout(t.domain, due.browser)).toMatchObject({ status: 'failed', failureReason: 'expired', failureMessage: expect.stringMatching(/expired/) })
    expect((await getPaymentStatus(t.domain, { token: fresh.token, appDid: APP })).status).toBe('pending')
    // a second sweep finds nothing more to do for `due`
    await sweepCheckouts(t.domain)
    expect(await t.models.Settlement.countDocuments({ _id: due.checkoutId })).toBe(1)
    await expectCode(payCheckout(t.domain, due.browser, GOOD_CARD), 'CheckoutClosed')
  })

  test('without the sweep, a read expires it: the status poll ends', async () => {
    const c = await start()
    t.clock.advance(24 * 60 * 60 * 1000)
    expect(await getPaymentStatus(t.domain, { token: c.token, appDid: APP })).toEqual({ status: 'failed', ref: null, failureReason: 'expired' })
    expect((await t.models.Settlement.findById(c.checkoutId).lean())?.by).toBe('expiry')
  })

  test('the page of an expired checkout shows it expired; paying it is CheckoutClosed, and nothing is charged', async () => {
    const c = await start()
    t.clock.advance(24 * 60 * 60 * 1000 + 1)
    await expectCode(payCheckout(t.domain, c.browser, GOOD_CARD), 'CheckoutClosed')
    expect(await getCheckout(t.domain, c.browser)).toMatchObject({ status: 'failed', failureReason: 'expired' })
    expect(chargesOf(c.checkoutId)).toBe(0)
  })
})

describe('recovery of interrupted settlements', () => {
  /** A payment claim whose outcome was recorded, and then the process died before finishing. */
  async function interrupted(outcome: Parameters<typeof recordOutcome>[2] | null, recordTid = TID.nextStr()) {
    const c = await start()
    const doc = (await t.models.Checkout.findById(c.checkoutId).lean())!
    expect(await claimSettlement(t.domain, doc as never, 'payment', { processor: 'test', recordTid })).toBe(true)
    await t.models.Checkout.updateOne({ _id: c.checkoutId }, { $set: { status: 'processing' } })
    if (outcome) await recordOutcome(t.domain, c.checkoutId, outcome)
    return c
  }

  test('a status read finishes a processing checkout whose outcome is known', async () => {
    const c = await interrupted({ ok: true, chargeId: 'ch_x' }, '3lbxhbpvnum2k')
    const status = await getPaymentStatus(t.domain, { token: c.token, appDid: APP })
    expect(status.status).toBe('completed')
    expect(status.ref?.uri).toBe(`at://${SERVICE_DID}/money.svc.payment.record/3lbxhbpvnum2k`)
    expect(await t.models.Outbox.countDocuments({ key: `payment.completed:${c.checkoutId}` })).toBe(1)
  })

  test('two recoveries whose outcome writes met (the later time kept) complete it with one time: the record\'s, in its event and on the checkout', async () => {
    const c = await interrupted({ ok: true, chargeId: 'ch_met' })
    const first = (await t.models.Settlement.findById(c.checkoutId).lean())!.settledAt!
    // one recovery's finish stores the record, then its event cannot be written
    const Outbox = new Proxy(t.models.Outbox, {
      get: (target, prop, receiver) => (prop === 'create' ? () => Promise.reject(new Error('connection closed')) : Reflect.get(target, prop, receiver)),
    })
    await expect(finishSettlement({ ...t.domain, models: { ...t.models, Outbox } }, c.checkoutId)).rejects.toThrow('connection closed')
    // the other recovery's write of the same answer, which matched `outcome: null` with the first, lands after it
    // (FerretDB reads, then writes the whole document): its time stays on the settlement
    t.clock.advance(1500)
    await t.models.Settlement.updateOne({ _id: c.checkoutId }, { $set: { settledAt: t.clock.now } })
    await finishSettlement(t.domain, c.checkoutId)
    const record = JSON.parse((await t.models.PaymentRecord.findOne({ checkoutId: c.checkoutId }).lean())!.recordJson) as { createdAt: string }
    const event = (await t.models.Outbox.findOne({ key: `payment.completed:${c.checkoutId}` }).lean())!
    const checkout = (await t.models.Checkout.findById(c.checkoutId).lean())!
    expect(record.createdAt).toBe(first.toISOString())
    expect((event.data as { completedAt: string }).completedAt).toBe(first.toISOString())
    expect(new Date(event.occurredAt).toISOString()).toBe(first.toISOString())
    expect(checkout).toMatchObject({ status: 'completed', completedAt: first })
  })

  test('two checkouts whose processes chose the same record key both complete, each with its own record and event', async () => {
    // two payments processes make the same TID when their clocks and clock ids meet
    const tid = TID.nextStr()
    const a = await interrupted({ ok: true, chargeId: 'ch_a' }, tid)
    const b = await interrupted({ ok: true, chargeId: 'ch_b' }, tid)
    const first = await getPaymentStatus(t.domain, { token: a.token, appDid: APP })
    const second = await getPaymentStatus(t.domain, { token: b.token, appDid: APP })
    expect([first.status, second.status]).toEqual(['completed', 'completed'])
    expect(first.ref!.uri).toBe(`at://${SERVICE_DID}/money.svc.payment.record/${tid}`)
    expect(second.ref!.uri).toMatch(new RegExp(`^at://${SERVICE_DID}/money\\.svc\\.payment\\.record/[a-z2-7]{13}$`))
    expect(second.ref!.uri).not.toBe(first.ref!.uri)
    // a repeat finds the record it stored
    expect((await getPaymentStatus(t.domain, { token: b.token, appDid: APP })).ref).toEqual(second.ref)
    expect(await t.models.PaymentRecord.countDocuments({ checkoutId: { $in: [a.checkoutId, b.checkoutId] } })).toBe(2)
    for (const c of [a, b]) expect(await t.models.Outbox.countDocuments({ key: `payment.completed:${c.checkoutId}` })).toBe(1)
  })

  test('the checkout page read and the sweep finish them too', async () => {
    const a = await interrupted({ ok: false, reason: 'declined', code: 'card_declined', message: 'Your card was declined.' })
    expect(await getCheckout(t.domain, a.browser)).toMatchObject({ status: 'failed', failureReason: 'declined' })
    const b = await interrupted({ ok: true, chargeId: 'ch_y' })
    const result = await sweepCheckouts(t.domain)
    expect(result.recovered).toBeGreaterThanOrEqual(1)
    expect((await getPaymentStatus(t.domain, { token: b.token, appDid: APP })).status).toBe('completed')
  })

  test('a payment claim never marked processing (its process failed in between) blocks pays for a minute, then fails as unconfirmed: nothing charged', async () => {
    /** the state a pay leaves when the database fails right after its claim: the claim, the checkout still pending */
    const unmarked = async () => {
      const c = await start()
      const doc = (await t.models.Checkout.findById(c.checkoutId).lean())!
      expect(await claimSettlement(t.domain, doc as never, 'payment', { processor: 'test', recordTid: TID.nextStr() })).toBe(true)
      return c
    }
    const bySweep = await unmarked()
    const byPay = await unmarked()
    // meanwhile the claimant may still be on its way to the charge: pays are refused, the checkout stays pending
    await expectCode(payCheckout(t.domain, byPay.browser, GOOD_CARD), 'CheckoutClosed')
    await sweepCheckouts(t.domain)
    expect((await getPaymentStatus(t.domain, { token: bySweep.token, appDid: APP })).status).toBe('pending')
    // the sweep finds such claims by this equality, which FerretDB hands to PostgreSQL (not every settlement read)
    expect((await t.models.Settlement.findById(bySweep.checkoutId).lean())!.awaiting).toBe(true)
    expect(((await t.models.Settlement.collection.find({ awaiting: true }).explain()) as { filterPushdown?: boolean }).filterPushdown).toBe(true)

    t.clock.advance(UNANSWERED_PAYMENT_CLAIM_MS + 1000)
    // a pay that meets the old claim ends the checkout, and is refused
    await expectCode(payCheckout(t.domain, byPay.browser, GOOD_CARD), 'CheckoutClosed')
    expect(await getCheckout(t.domain, byPay.browser)).toMatchObject({ status: 'failed', failureReason: 'processor_error' })
    // the sweep ends the one no pay met
    expect((await sweepCheckouts(t.domain)).recovered).toBeGreaterThanOrEqual(1)
    expect(await getCheckout(t.domain, bySweep.browser)).toMatchObject({ status: 'failed', failureReason: 'processor_error' })
    expect((await t.models.Settlement.findById(bySweep.checkoutId).lean())!.awaiting).toBe(false)
    expect(chargesOf(bySweep.checkoutId) + chargesOf(byPay.checkoutId)).toBe(0)
    // the processor closed their keys: a charge arriving now is refused
    expect(await processor.inner.charge(chargeRequest(bySweep.checkoutId))).toMatchObject({ ok: false, code: 'processing_error' })
  })

  test('a payment claim left unmarked exactly a minute ago is ended by the sweep that picks it (both count a minute alike)', async () => {
    const c = await start()
    const doc = (await t.models.Checkout.findById(c.checkoutId).lean())!
    expect(await claimSettlement(t.domain, doc as never, 'payment', { processor: 'test', recordTid: TID.nextStr() })).toBe(true)
    t.clock.advance(UNANSWERED_PAYMENT_CLAIM_MS)
    expect((await sweepCheckouts(t.domain)).recovered).toBeGreaterThanOrEqual(1)
    expect(await getCheckout(t.domain, c.browser)).toMatchObject({ status: 'failed', failureReason: 'processor_error' })
    expect(chargesOf(c.checkoutId)).toBe(0)
  })

  test('a payment claim left unmarked that no sweep met within ten minutes (the sweep away, or slow) is ended by the next one', async () => {
    const c = await start()
    const doc = (await t.models.Checkout.findById(c.checkoutId).lean())!
    expect(await claimSettlement(t.domain, doc as never, 'payment', { processor: 'test', recordTid: TID.nextStr() })).toBe(true)
    t.clock.advance(15 * 60 * 1000)
    expect((await sweepCheckouts(t.domain)).recovered).toBeGreaterThanOrEqual(1)
    expect(await getCheckout(t.domain, c.browser)).toMatchObject({ status: 'failed', failureReason: 'processor_error' })
    expect(chargesOf(c.checkoutId)).toBe(0)
  })

  test('an unmarked payment claim whose recovered outcome could not be applied (the checkout write failed) is finished by the next sweep, not left pending until it expires', async () => {
    const c = await start()
    const doc = (await t.models.Checkout.findById(c.checkoutId).lean())!
    expect(await claimSettlement(t.domain, doc as never, 'payment', { processor: 'test', recordTid: TID.nextStr() })).toBe(true)
    t.clock.advance(UNANSWERED_PAYMENT_CLAIM_MS + 1000)
    // the sweep records the processor's answer (no charge), then cannot write the checkout
    let failing = true
    const Checkout = new Proxy(t.models.Checkout, {
      get(target, prop, receiver) {
        if (prop !== 'updateOne') return Reflect.get(target, prop, receiver)
        return (...args: Parameters<typeof target.updateOne>) => {
          if (failing && (args[0] as { _id?: unknown })._id === c.checkoutId) {
            failing = false
            return Promise.reject(new Error('connection 3 to 127.0.0.1:27017 closed'))
          }
          return target.updateOne(...args)
        }
      },
    })
    expect((await sweepCheckouts({ ...t.domain, models: { ...t.models, Checkout } })).failed).toBeGreaterThanOrEqual(1)
    expect(failing).toBe(false)
    expect((await t.models.Settlement.findById(c.checkoutId).lean())!.outcome).toMatchObject({ ok: false, code: 'unconfirmed' })
    expect((await t.models.Checkout.findById(c.checkoutId).lean())!.status).toBe('pending')
    // the next sweep applies it
    await sweepCheckouts(t.domain)
    expect((await getPaymentStatus(t.domain, { token: c.token, appDid: APP })).status).toBe('failed')
    expect((await t.models.Settlement.findById(c.checkoutId).lean())!.awaiting).toBe(false)
  })

  test('a processor answer whose write fails at first (the database restarting) is written once it can be: completed, charged once', async () => {
    const c = await start()
    // the settlement's writes fail twice, as while FerretDB restarts, then work again
    let failures = 2
    const Settlement = new Proxy(t.models.Settlement, {
      get(target, prop, receiver) {
        if (prop !== 'updateOne') return Reflect.get(target, prop, receiver)
        return (...args: Parameters<typeof target.updateOne>) => {
          if (failures-- > 0) return Promise.reject(new Error('connection 3 to 127.0.0.1:27017 closed'))
          return target.updateOne(...args)
        }
      },
    })
    const restarting = { ...t.domain, models: { ...t.models, Settlement } }
    const view = await payCheckout(restarting, c.browser, GOOD_CARD)
    expect(failures).toBe(-2) // two refused, then the outcome and, once applied, the claim no longer awaiting
    expect(view).toMatchObject({ status: 'completed' })
    expect(chargesOf(c.checkoutId)).toBe(1)
    expect(await t.models.Outbox.countDocuments({ key: `payment.completed:${c.checkoutId}` })).toBe(1)

    // a database that stays away past the retry window: the pay fails, and the checkout waits, processing, for recovery
    const d = await start()
    const away = { ...t.domain, outcomeWriteRetryMs: 300, models: { ...t.models, Settlement: new Proxy(t.models.Settlement, {
      get: (target, prop, receiver) => (prop === 'updateOne' ? () => Promise.reject(new Error('connection closed')) : Reflect.get(target, prop, receiver)),
    }) } }
    await expect(payCheckout(away, d.browser, GOOD_CARD)).rejects.toThrow('connection closed')
    expect((await getPaymentStatus(t.domain, { token: d.token, appDid: APP })).status).toBe('processing')
  })

  test('a processing checkout whose process died after the processor charged: after a minute a read asks the processor, and it completes', async () => {
    const c = await interrupted(null)
    // the processor has the charge; its answer died with the process
    expect(await processor.inner.charge(chargeRequest(c.checkoutId))).toMatchObject({ ok: true })
    await sweepCheckouts(t.domain)
    expect((await getPaymentStatus(t.domain, { token: c.token, appDid: APP })).status).toBe('processing')
    await expectCode(payCheckout(t.domain, c.browser, GOOD_CARD), 'CheckoutClosed')
    t.clock.advance(UNANSWERED_PAYMENT_CLAIM_MS + 1000)
    expect(await getPaymentStatus(t.domain, { token: c.token, appDid: APP })).toEqual({ status: 'completed', ref: expect.objectContaining({ uri: expect.any(String) }), failureReason: null })
    expect(await t.models.Outbox.countDocuments({ key: `payment.completed:${c.checkoutId}` })).toBe(1)
  })

  test('a processing checkout whose process died before the processor charged: the sweep asks, fails it as unconfirmed, and the key is closed', async () => {
    const c = await interrupted(null)
    t.clock.advance(UNANSWERED_PAYMENT_CLAIM_MS + 1000)
    expect((await sweepCheckouts(t.domain)).recovered).toBeGreaterThanOrEqual(1)
    expect(await getCheckout(t.domain, c.browser)).toMatchObject({ status: 'failed', failureReason: 'processor_error', failureMessage: 'The payment could not be confirmed. No payment was made.' })
    // a charge request still on its way when the key closed is refused
    expect(await processor.inner.charge(chargeRequest(c.checkoutId))).toEqual({ ok: false, code: 'processing_error', message: expect.stringMatching(/No payment was made/) })
  })

  test('a processor that cannot tell keeps the checkout processing; the next read after it answers settles it', async () => {
    const c = await interrupted(null)
    t.clock.advance(UNANSWERED_PAYMENT_CLAIM_MS + 1000)
    const down: PaymentProcessor = { name: 'test', charge: async () => Promise.reject(new Error('down')), resolveCharge: async () => Promise.reject(new Error('503 from the processor')) }
    const unreachable = { ...t.domain, processors: new ProcessorRegistry({ test: down, live: null }) }
    expect((await getPaymentStatus(unreachable, { token: c.token, appDid: APP })).status).toBe('processing')
    expect((await sweepCheckouts(unreachable)).failed).toBe(0)
    expect((await getPaymentStatus(t.domain, { token: c.token, appDid: APP })).status).toBe('failed')
  })

  test('checkouts the sweep cannot end never keep the others from their turn: each run goes on after the last one', async () => {
    const down: PaymentProcessor = { name: 'test', charge: async () => Promise.reject(new Error('down')), resolveCharge: async () => Promise.reject(new Error('503 from the processor')) }
    const unreachable = { ...t.domain, processors: new ProcessorRegistry({ test: down, live: null }) }
    // processing checkouts that stay so while the processor cannot answer, one of them before the one it can end
    const stuck = [await interrupted(null), await interrupted(null)]
    const known = await interrupted({ ok: true, chargeId: 'ch_turn' })
    while (!stuck.some((s) => s.checkoutId < known.checkoutId)) stuck.push(await interrupted(null))
    t.clock.advance(UNANSWERED_PAYMENT_CLAIM_MS + 1000)
    const statusOf = async (id: string) => (await t.models.Checkout.findById(id, { status: 1 }).lean())!.status

    // one checkout of each kind per run (the limit), so every processing checkout is reached within as many runs
    const runs = await t.models.Checkout.countDocuments({ status: 'processing' })
    let after: SweepCursor = {}
    for (let run = 0; run < runs && (await statusOf(known.checkoutId)) === 'processing'; run++) {
      ;({ resumeAfter: after } = await sweepCheckouts(unreachable, { limit: 1, after }))
    }
    expect(await statusOf(known.checkoutId)).toBe('completed')
    for (const s of stuck) expect(await statusOf(s.checkoutId)).toBe('processing')
  })

  test('awaiting claims the sweep cannot end (unmarked payments, cut-off closes) never keep the others from their turn either', async () => {
    /** a pay cut off after its claim (the checkout left pending), and a cancel cut off after its claim */
    const claimed = async (by: 'payment' | 'cancel') => {
      const c = await start()
      const doc = (await t.models.Checkout.findById(c.checkoutId).lean())!
      const extra = by === 'payment' ? { processor: 'test', recordTid: TID.nextStr() } : { outcome: { ok: false, reason: 'canceled' as const, code: 'canceled', message: 'canceled' } }
      expect(await claimSettlement(t.domain, doc as never, by, extra)).toBe(true)
      return c
    }
    const stuckPays = [await claimed('payment'), await claimed('payment'), await claimed('payment')]
    const stuckCloses = [await claimed('cancel'), await claimed('cancel'), await claimed('cancel')]
    const pay = await claimed('payment')
    const close = await claimed('cancel')
    const stuck = new Set([...stuckPays, ...stuckCloses].map((c) => c.checkoutId))
    t.clock.advance(UNANSWERED_PAYMENT_CLAIM_MS + 1000)
    // the processor cannot tell about the stuck payments, and their closes' checkouts cannot be written
    const picky: PaymentProcessor = {
      name: 'test',
      charge: async () => Promise.reject(new Error('down')),
      resolveCharge: async (key) => (stuck.has(key.slice('checkout:'.length)) ? Promise.reject(new Error('503 from the processor')) : processor.inner.resolveCharge(key)),
    }
    const Checkout = new Proxy(t.models.Checkout, {
      get(target, prop, receiver) {
        if (prop !== 'updateOne') return Reflect.get(target, prop, receiver)
        return (...args: Parameters<typeof target.updateOne>) =>
          stuck.has((args[0] as { _id?: string })._id!) ? Promise.reject(new Error('write refused')) : target.updateOne(...args)
      },
    })
    const failing = { ...t.domain, processors: new ProcessorRegistry({ test: picky, live: null }), models: { ...t.models, Checkout } }
    const statusOf = async (id: string) => (await t.models.Checkout.findById(id, { status: 1 }).lean())!.status

    // one claim of each kind per run (the limit): within as many runs as there are awaiting claims, every one is reached
    const runs = (await t.models.Settlement.countDocuments({ awaiting: true })) + 1
    let after: SweepCursor = {}
    for (let run = 0; run < runs && ((await statusOf(pay.checkoutId)) === 'pending' || (await statusOf(close.checkoutId)) === 'pending'); run++) {
      ;({ resumeAfter: after } = await sweepCheckouts(failing, { limit: 1, after }))
    }
    expect(await getCheckout(t.domain, pay.browser)).toMatchObject({ status: 'failed', failureReason: 'processor_error' })
    expect(await getCheckout(t.domain, close.browser)).toMatchObject({ status: 'failed', failureReason: 'canceled' })
    for (const id of stuck) expect(await statusOf(id)).toBe('pending')
  })
})

describe('test processor', () => {
  const req = (number: string, key: string) => ({ ...chargeRequest('chk_1'), card: { ...chargeRequest('chk_1').card, number }, idempotencyKey: key })
  const key = () => `checkout:${TID.nextStr()}`

  test('4242… succeeds, with a charge id stable per idempotency key; a repeat gets the first answer', async () => {
    const k = key()
    const a = await processor.inner.charge(req(TEST_CARDS.succeeds, k))
    expect(a).toEqual({ ok: true, chargeId: expect.stringMatching(/^ch_test_/) })
    expect(await processor.inner.charge(req(TEST_CARDS.declined, k))).toEqual(a)
    expect(await processor.inner.resolveCharge(k)).toEqual(a)
  })

  test('4000 0000 0000 0002 is declined; another Luhn-valid number asks for a test card', async () => {
    expect(await processor.inner.charge(req(TEST_CARDS.declined, key()))).toEqual({ ok: false, code: 'card_declined', message: 'Your card was declined.' })
    const other = await processor.inner.charge(req('4012888888881881', key()))
    expect(other).toMatchObject({ ok: false, code: 'test_card_required' })
    expect(other.ok === false && other.message).toMatch(/use a test card number/)
  })

  test('resolveCharge of an unknown key: none, and the key is closed, also under concurrent charges', async () => {
    const k = key()
    const answers = await Promise.all([processor.inner.resolveCharge(k), processor.inner.charge(req(TEST_CARDS.succeeds, k)), processor.inner.resolveCharge(k), processor.inner.charge(req(TEST_CARDS.succeeds, k))])
    const [firstResolve, firstCharge, secondResolve, secondCharge] = answers
    // one entry decides: either the charge happened and every answer says so, or the key closed and none charged
    if (firstCharge.ok) expect([firstResolve, secondResolve, secondCharge]).toEqual([firstCharge, firstCharge, firstCharge])
    else expect([firstResolve, secondResolve, secondCharge.ok]).toEqual([null, null, false])
    expect(await t.models.TestCharge.countDocuments({ _id: k })).toBe(1)
  })

  test('the registry: test has the test processor, live none (ProcessorNotConfigured)', () => {
    const registry = createProcessorRegistry({ liveProcessor: 'none' }, t.models)
    expect(registry.forEnvironment('test').name).toBe('test')
    expect(() => registry.forEnvironment('live')).toThrow(expect.objectContaining({ code: 'ProcessorNotConfigured', message: expect.stringMatching(/none is configured/) }))
  })
})

test("the failure reasons a checkout keeps are the known values of payment.status's failureReason, and only those", () => {
  const status = lexicons.getDefOrThrow('network.svc.payment.status') as unknown as { output: { schema: { properties: { failureReason: { knownValues: string[] } } } } }
  expect([...FAILURE_REASONS].sort()).toEqual([...status.output.schema.properties.failureReason.knownValues].sort())
})
