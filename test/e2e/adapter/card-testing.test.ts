/**
 * Card testing on the hosted checkout, through the whole stack with Redis: pay-form submissions are counted per
 * client address, refused card forms also per checkout. The refused form past the checkout's limit locks it (`failed`,
 * too_many_attempts, a 429 page), the app's status poll sees it failed, and later submissions find it closed; past
 * the address's limit the submission is refused (429) and the checkout stays open for its buyer.
 */
import { createHash, randomBytes } from 'node:crypto'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectOk, httpRequest, type HttpResult } from './helpers'
import { initiate, paymentStatus, product } from './payment-helpers'

const PER_CHECKOUT = 3
const PER_ADDRESS = 5

let stack: TestStack
let app: TestApp

beforeAll(async () => {
  stack = await startStack('card-testing', {
    limits: { payAttemptsPerCheckout: PER_CHECKOUT, payAttemptsPerAddress: { max: PER_ADDRESS, windowMs: 60_000 } },
    // a proxy on loopback (TRUST_PROXY=127.0.0.1) names the client; without the header the connection's address counts
    trustProxy: ['127.0.0.1'],
  })
})
afterAll(async () => {
  await stack.stop()
})
beforeEach(async () => {
  app = await stack.newApp()
  // every test starts with the loopback address's count at zero (@fastify/rate-limit puts its own infix before the name)
  const keys = await stack.redis.keys(`${stack.redisPrefix}ratelimit:*pay-address:*`)
  if (keys.length > 0) await stack.redis.del(...keys)
})

const expYear = String(new Date().getUTCFullYear() + 2)
const VALID = '4242424242424242'
const NOT_A_CARD = '4242424242424241'

async function newCheckout() {
  const body = expectOk(await initiate(stack, app, product(app.did, { amount: 1500, description: 'Poster' })))
  return { statusToken: body.token as string, url: body.url as string }
}

function pay(url: string, number: string, forwardedFor?: string): Promise<HttpResult> {
  return httpRequest(`${url}/pay`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
    body: new URLSearchParams({ number, expMonth: '12', expYear, cvc: '123', name: 'Bea Buyer' }).toString(),
    redirect: 'manual',
  })
}

async function expectLocked(checkout: { statusToken: string; url: string }) {
  expect(expectOk(await paymentStatus(stack, app, checkout.statusToken))).toEqual({ status: 'failed', failureReason: 'too_many_attempts' })
  const stored = await stack.payments.Checkout.findOne({ appDid: app.did, status: 'failed', failureReason: 'too_many_attempts' }).lean()
  expect(stored).not.toBeNull()
  const settlement = await stack.payments.Settlement.findById(stored!._id).lean()
  expect(settlement).toMatchObject({ by: 'lock', processor: null, outcome: { ok: false, reason: 'too_many_attempts' } })
}

it('a checkout takes a few refused card forms, then the next one locks it instead of showing the form; the app sees it failed', async () => {
  const checkout = await newCheckout()
  for (let i = 0; i < PER_CHECKOUT; i++) {
    const refused = await pay(checkout.url, NOT_A_CARD)
    expect(refused.status).toBe(400)
    expect(refused.text).toContain('Your card number is invalid.')
  }
  const locked = await pay(checkout.url, NOT_A_CARD)
  expect(locked.status).toBe(429)
  expect(locked.text).toContain('Too many payment attempts were made. This checkout is closed and no payment was made.')
  await expectLocked(checkout)
  // later submissions find it closed, a card that would succeed included
  expect((await pay(checkout.url, VALID)).status).toBe(409)
  expect(await stack.payments.Settlement.countDocuments({ appDid: app.did })).toBe(1)
})

it('a buyer who mistyped up to the limit still pays: only refused card forms count for the checkout', async () => {
  const checkout = await newCheckout()
  for (let i = 0; i < PER_CHECKOUT; i++) expect((await pay(checkout.url, NOT_A_CARD, `203.0.113.${40 + i}`)).status).toBe(400)
  expect((await pay(checkout.url, VALID, '203.0.113.50')).status).toBe(303)
  expect(expectOk(await paymentStatus(stack, app, checkout.statusToken)).status).toBe('completed')
})

/** Refused for its client address: the form again (429, Retry-After), nothing charged, the checkout still open. */
async function expectRefusedForAddress(res: HttpResult, checkout: { statusToken: string }) {
  expect(res.status).toBe(429)
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
  expect(res.text).toContain('Too many payment attempts came from your network. No payment was made; please try again later.')
  expect(res.text).toContain('id="pay-form"')
  expect(expectOk(await paymentStatus(stack, app, checkout.statusToken))).toEqual({ status: 'pending' })
}

it('one client address paying many checkouts is stopped: its next submissions are refused, and the checkout stays open for its buyer', async () => {
  for (let i = 0; i < PER_ADDRESS; i++) {
    const declined = await pay((await newCheckout()).url, '4000000000000002')
    expect(declined.status).toBe(200)
    expect(declined.text).toContain('Payment declined')
  }
  const next = await newCheckout()
  // however often: a submission refused for its address spends nothing of the checkout's own count
  for (let i = 0; i <= PER_CHECKOUT; i++) await expectRefusedForAddress(await pay(next.url, VALID), next)
  expect(await stack.payments.Settlement.countDocuments({ appDid: app.did })).toBe(PER_ADDRESS)
  // the buyer, from another network, pays it
  expect((await pay(next.url, VALID, '198.51.100.30')).status).toBe(303)
  expect(expectOk(await paymentStatus(stack, app, next.statusToken)).status).toBe('completed')
})

it('behind a trusted proxy each client address is counted on its own (X-Forwarded-For)', async () => {
  // a client the proxy names reaches the limit alone …
  for (let i = 0; i < PER_ADDRESS; i++) expect((await pay((await newCheckout()).url, '4000000000000002', '203.0.113.7')).status).toBe(200)
  // … while another client behind the same proxy still pays
  expect((await pay((await newCheckout()).url, VALID, '198.51.100.20')).status).toBe(303)
  const next = await newCheckout()
  await expectRefusedForAddress(await pay(next.url, VALID, '203.0.113.7'), next)
  // the proxy's own address (the connection's) was never counted
  expect((await pay((await newCheckout()).url, VALID)).status).toBe(303)
})

it('links that name no checkout count for their address in their environment only: no count of their own, and live guesses never lock a test checkout', async () => {
  const guesses = Array.from({ length: PER_ADDRESS + 2 }, () => `cko_live_${randomBytes(32).toString('base64url')}`)
  for (const token of guesses) expect((await pay(`${stack.checkoutUrl}/checkout/${token}`, VALID, '203.0.113.9')).status).toBe(404)
  for (const token of guesses) {
    const hash = createHash('sha256').update(token).digest('base64url')
    expect(await stack.redis.keys(`${stack.redisPrefix}ratelimit:*pay-checkout:${hash}`)).toEqual([])
  }
  // the address is past its live count, not its test one
  expect((await pay((await newCheckout()).url, VALID, '203.0.113.9')).status).toBe(303)
})

it('IPv6 clients are counted by their /64: a new address of the same network for each submission changes nothing', async () => {
  for (let i = 1; i <= PER_ADDRESS; i++) expect((await pay((await newCheckout()).url, NOT_A_CARD, `2001:db8:1:2::${i}`)).status).toBe(400)
  const next = await newCheckout()
  await expectRefusedForAddress(await pay(next.url, VALID, '2001:db8:1:2:ffff::99'), next)
  // another /64 is another client
  expect((await pay((await newCheckout()).url, VALID, '2001:db8:1:3::1')).status).toBe(303)
})

it('a buyer sending the form many times at once is charged once and never locked out', async () => {
  const checkout = await newCheckout()
  // each from its own address: only the checkout's count could apply
  const results = await Promise.all(Array.from({ length: 4 * PER_CHECKOUT }, (_, i) => pay(checkout.url, VALID, `203.0.113.${100 + i}`)))
  // one payment (303); the others find it being paid or paid (409), none is locked (429: what a count of every
  // submission did when the clicks past the limit beat the first one's claim)
  expect(results.map((r) => r.status).sort()).toEqual([303, ...Array<number>(4 * PER_CHECKOUT - 1).fill(409)])
  expect(expectOk(await paymentStatus(stack, app, checkout.statusToken)).status).toBe('completed')
  expect(await stack.payments.Settlement.countDocuments({ appDid: app.did })).toBe(1)
})

it('refused card forms sent at once past the limit lock the checkout once', async () => {
  const checkout = await newCheckout()
  const results = await Promise.all(Array.from({ length: PER_CHECKOUT + 3 }, (_, i) => pay(checkout.url, NOT_A_CARD, `203.0.113.${150 + i}`)))
  const statuses = results.map((r) => r.status)
  // the forms within the limit are refused (400, or 409 once the lock closed the checkout), one past it locks (429),
  // the others past it find it closed (409)
  expect(statuses.filter((s) => s === 429)).toHaveLength(1)
  expect(statuses.filter((s) => s === 400).length).toBeLessThanOrEqual(PER_CHECKOUT)
  expect(statuses.every((s) => [400, 409, 429].includes(s))).toBe(true)
  await expectLocked(checkout)
  expect(await stack.payments.Settlement.countDocuments({ appDid: app.did })).toBe(1)
})
