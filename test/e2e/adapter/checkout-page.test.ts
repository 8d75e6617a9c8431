/**
 * The hosted checkout pages through the whole stack (checkout host → gateway → payments subgraph → FerretDB), with
 * plain HTTP form posts standing in for the buyer's browser (checkout-browser.test.ts drives a real Chromium):
 * what the page shows, pay (success, decline, refused card, processor error), cancel, already-settled and expired
 * checkouts, invalid links, and the app's view of each outcome through network.svc.payment.status.
 */
import { randomBytes, createHash } from 'node:crypto'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { DEFAULT_REGISTRATION, expectOk, httpRequest, updateConfig, type HttpResult } from './helpers'
import { approvedCreator, initiate, paymentStatus, product } from './payment-helpers'

let stack: TestStack
/** an app that passes the service fee to the buyer */
let app: TestApp

const SECURITY = {
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https: http:; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
}

beforeAll(async () => {
  stack = await startStack('checkout-page')
  app = await stack.newApp()
  expectOk(await updateConfig(stack, app, { environment: 'test', ticketFee: { passToBuyer: true } }))
})
afterAll(async () => {
  await stack.stop()
})

const RETURN_URL = 'https://app.example.com/thanks?order=42'
const CANCEL_URL = 'https://app.example.com/cart'
const nextYear = String((new Date().getUTCFullYear() + 2) % 100).padStart(2, '0')
const card = (number: string, extra: Record<string, string> = {}) => ({ number, expiry: `12/${nextYear}`, cvc: '123', name: 'Bea Buyer', ...extra })

/** A self-sale checkout (no approval needed) of `amount` cents; the status token, the browser URL and its token. */
async function newCheckout(forApp: TestApp = app, fields: Record<string, unknown> = {}) {
  const body = expectOk(
    await initiate(stack, forApp, product(forApp.did, { amount: 1000, description: 'Tip & "thanks" <3', returnUrl: RETURN_URL, cancelUrl: CANCEL_URL, ...fields })),
  )
  const url: string = body.url
  expect(url.startsWith(`${stack.checkoutUrl}/checkout/cko_test_`)).toBe(true)
  return { statusToken: body.token as string, url, browserToken: url.split('/').pop()! }
}

const getPage = (url: string) => httpRequest(url, { redirect: 'manual' })

function postForm(url: string, fields: Record<string, string> = {}): Promise<HttpResult> {
  return httpRequest(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  })
}

/** What the buyer reads: the text of the page without markup. */
const textOf = (page: string) =>
  page
    .replace(/<style>[\s\S]*?<\/style>/g, '')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')

function expectPage(res: HttpResult, status: number): string {
  expect({ status: res.status, type: res.headers.get('content-type') }).toEqual({ status, type: 'text/html; charset=utf-8' })
  for (const [k, v] of Object.entries(SECURITY)) expect(res.headers.get(k)).toBe(v)
  expect(res.requestId).toMatch(/^req_[0-9a-f]{32}$/)
  expect(res.text.startsWith('<!doctype html>')).toBe(true)
  return textOf(res.text)
}

function expectRedirect(res: HttpResult, location: string): void {
  expect({ status: res.status, location: res.headers.get('location') }).toEqual({ status: 303, location })
  for (const [k, v] of Object.entries(SECURITY)) expect(res.headers.get(k)).toBe(v)
}

async function statusOf(statusToken: string, forApp: TestApp = app) {
  return expectOk(await paymentStatus(stack, forApp, statusToken))
}

describe('the checkout page', () => {
  it('shows the recipient, the description, the amount, the service fee the buyer pays, the total, TEST MODE and the test cards', async () => {
    const { url, browserToken } = await newCheckout()
    const res = await getPage(url)
    const text = expectPage(res, 200)
    const fee = Math.floor((1000 * DEFAULT_REGISTRATION.ticketFee.bps + 5000) / 10000) + DEFAULT_REGISTRATION.ticketFee.flatAmount // 55
    const money = (cents: number) => `$${(cents / 100).toFixed(2)}`
    expect(text).toContain('TEST MODE')
    expect(res.text).toContain(`<code id="recipient-did">${app.did}</code>`)
    expect(res.text).toContain('<p id="description">Tip &amp; &quot;thanks&quot; &lt;3</p>')
    expect(res.text).toContain(`<dd id="amount">${money(1000)}</dd>`)
    expect(res.text).toMatch(new RegExp(`<dt>Service fee</dt><dd id="buyer-fee">\\${money(fee)}</dd>`))
    expect(res.text).toContain(`<dd id="total">${money(1000 + fee)}</dd>`)
    expect(res.text).toContain(`id="pay">Pay ${money(1000 + fee)}</button>`)
    expect(text).toContain('4242 4242 4242 4242 (succeeds)')
    expect(text).toContain('4000 0000 0000 0002 (declined)')
    // the one optional field says so in its label, and is not required
    expect(text).toContain('Name on card (optional)')
    expect(res.text).not.toMatch(/<input [^>]*id="name"[^>]* required/)
    expect(res.text).toContain(`action="/checkout/${browserToken}/pay"`)
    expect(res.text).toContain(`action="/checkout/${browserToken}/cancel"`)
    expect(res.text).not.toMatch(/<script/i)
  })

  it('has no fee line when the app keeps the fee (passToBuyer off), and names a recipient without a name by DID', async () => {
    const other = await stack.newApp()
    const { url } = await newCheckout(other, { amount: 2500 })
    const res = await getPage(url)
    expectPage(res, 200)
    expect(res.text).not.toContain('Service fee')
    expect(res.text).toContain(`<h1 id="recipient">${other.did}</h1>`)
    expect(res.text).toContain('<dd id="total">$25.00</dd>')
    expect(res.text).toContain('id="pay">Pay $25.00</button>')
  })

  it("names an approved creator by display name and DID", async () => {
    const { did } = await approvedCreator(stack, app)
    const body = expectOk(await initiate(stack, app, product(did, { amount: 1000 })))
    const res = await getPage(body.url)
    expectPage(res, 200)
    expect(res.text).toContain('<h1 id="recipient">Ada Creator</h1>')
    expect(res.text).toContain(`<code id="recipient-did">${did}</code>`)
  })

  it('formats a zero-decimal currency', async () => {
    const other = await stack.newApp()
    const { url } = await newCheckout(other, { amount: 1500, currency: 'jpy' })
    const res = await getPage(url)
    expectPage(res, 200)
    expect(res.text).toContain('id="pay">Pay ¥1,500</button>')
  })

  it.each([
    ['an unknown token', () => `cko_test_${randomBytes(32).toString('base64url')}`],
    ['an unknown live token', () => `cko_live_${randomBytes(32).toString('base64url')}`],
    ['a status token', () => `pst_test_${randomBytes(32).toString('base64url')}`],
    ['a malformed token', () => 'cko_test_short'],
    ['markup', () => encodeURIComponent('<script>alert(1)</script>')],
  ])('%s → 404 "This checkout link is not valid", without the token', async (_label, make) => {
    const token = make()
    for (const res of [await getPage(`${stack.checkoutUrl}/checkout/${token}`), await postForm(`${stack.checkoutUrl}/checkout/${token}/pay`, card('4242424242424242'))]) {
      const text = expectPage(res, 404)
      expect(text).toContain('This checkout link is not valid')
      expect(res.text).not.toContain(token)
      expect(res.text).not.toContain(decodeURIComponent(token))
    }
  })

  it("the app's status token does not open the page", async () => {
    const { statusToken } = await newCheckout()
    expectPage(await getPage(`${stack.checkoutUrl}/checkout/${statusToken}`), 404)
  })
})

describe('paying', () => {
  it('4242… completes: 303 to the return URL with svc_checkout=completed; status completed with a ref; the link is single-use', async () => {
    const { url, statusToken } = await newCheckout()
    expect(await statusOf(statusToken)).toEqual({ status: 'pending' })
    expectRedirect(await postForm(`${url}/pay`, card('4242 4242 4242 4242')), `${RETURN_URL}&svc_checkout=completed`)
    const status = await statusOf(statusToken)
    expect(status).toEqual({ status: 'completed', ref: { uri: expect.stringMatching(/^at:\/\//), cid: expect.any(String) } })
    // the page now says so and links back to the app
    const page = await getPage(url)
    expect(expectPage(page, 200)).toContain('Payment complete')
    expect(page.text).toContain(`href="${RETURN_URL.replace('&', '&amp;')}&amp;svc_checkout=completed"`)
    expect(page.text).not.toContain('id="pay"')
    // paying or canceling again: 409 with the current state; nothing changes
    const again = await postForm(`${url}/pay`, card('4242424242424242'))
    expect(expectPage(again, 409)).toContain('Payment complete')
    const cancel = await postForm(`${url}/cancel`)
    expect(expectPage(cancel, 409)).toContain('Payment complete')
    expect(await statusOf(statusToken)).toEqual(status)
  })

  it('4000 0000 0000 0002 is declined: 200 "Payment declined: Your card was declined." with the cancel URL; status failed', async () => {
    const { url, statusToken } = await newCheckout()
    const res = await postForm(`${url}/pay`, card('4000 0000 0000 0002'))
    const text = expectPage(res, 200)
    expect(text).toContain('Payment declined: Your card was declined.')
    expect(res.text).toContain(`href="${CANCEL_URL}?svc_checkout=failed"`)
    expect(await statusOf(statusToken)).toEqual({ status: 'failed', failureReason: 'declined' })
    expect(expectPage(await getPage(url), 200)).toContain('Payment declined: Your card was declined.')
    expect(expectPage(await postForm(`${url}/pay`, card('4242424242424242')), 409)).toContain('Payment declined')
  })

  it('a refused card form → 400 with the form and the message, never the number; the link stays usable', async () => {
    const { url, statusToken } = await newCheckout()
    const bad = await postForm(`${url}/pay`, card('4242 4242 4242 4241'))
    const text = expectPage(bad, 400)
    expect(bad.text).toContain('id="form-error"')
    expect(text).toMatch(/card number/i)
    expect(bad.text).not.toMatch(/4242 ?4242 ?4242 ?4241/)
    expect(bad.text).toContain('id="pay"')
    expect(bad.text).toContain('value="Bea Buyer"')
    // the expiry is kept too (not sensitive); the number and the CVC are cleared
    expect(bad.text).toMatch(new RegExp(`<input [^>]*id="expiry"[^>]* value="12/${nextYear}"`))
    expect(bad.text).not.toMatch(/<input [^>]*id="(number|cvc)"[^>]* value=/)
    const expired = await postForm(`${url}/pay`, card('4242424242424242', { expiry: '01/20' }))
    expect(expectPage(expired, 400)).toMatch(/expired/i)
    const unreadable = await postForm(`${url}/pay`, card('4242424242424242', { expiry: 'soon' }))
    expect(expectPage(unreadable, 400)).toContain('Enter the expiry date as MM/YY.')
    expect(unreadable.text).toMatch(/<input [^>]*id="expiry"[^>]* value="soon"/)
    // for assistive technology: the title says there is an error, the field at fault is marked and described by it,
    // and the cursor starts there; an error the subgraph named (no field known) starts at the card number
    expect(unreadable.text).toContain('<title>Error: Enter the expiry date as MM/YY. – Pay ')
    expect(unreadable.text).toMatch(/<input [^>]*id="expiry"[^>]* aria-invalid="true" aria-describedby="form-error" autofocus[ >]/)
    expect(unreadable.text.match(/autofocus/g)).toHaveLength(1)
    expect(bad.text).toMatch(/<input [^>]*id="number"[^>]* aria-describedby="form-error" autofocus[ >]/)
    expect(bad.text).not.toContain('aria-invalid')
    expect(await statusOf(statusToken)).toEqual({ status: 'pending' })
    expectRedirect(await postForm(`${url}/pay`, card('4242424242424242')), `${RETURN_URL}&svc_checkout=completed`)
  })

  it('a processor error fails the checkout with the processor message', async () => {
    const { url, statusToken } = await newCheckout()
    const res = await postForm(`${url}/pay`, card('4000 0000 0000 0119'))
    expect(expectPage(res, 200)).toContain('Payment failed:')
    expect(await statusOf(statusToken)).toEqual({ status: 'failed', failureReason: 'processor_error' })
  })

  it('a form another site posts with the link (Sec-Fetch-Site cross-site or same-site) neither pays nor cancels: 403, nothing counted', async () => {
    const { url, statusToken } = await newCheckout()
    for (const site of ['cross-site', 'same-site']) {
      const pay = await httpRequest(`${url}/pay`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': site },
        body: new URLSearchParams(card('4242424242424242')).toString(),
        redirect: 'manual',
      })
      expect(expectPage(pay, 403)).toContain('The form came from another site')
      const cancel = await httpRequest(`${url}/cancel`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': site }, body: '', redirect: 'manual' })
      expectPage(cancel, 403)
    }
    expect(await statusOf(statusToken)).toEqual({ status: 'pending' })
    // the checkout's own form (same-origin) pays
    const own = await httpRequest(`${url}/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      body: new URLSearchParams(card('4242424242424242')).toString(),
      redirect: 'manual',
    })
    expectRedirect(own, `${RETURN_URL}&svc_checkout=completed`)
  })

  it('only form posts: a JSON body is an HTML 415 page and changes nothing', async () => {
    const { url, statusToken } = await newCheckout()
    const res = await httpRequest(`${url}/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(card('4242424242424242')), redirect: 'manual' })
    expectPage(res, 415)
    expect(await statusOf(statusToken)).toEqual({ status: 'pending' })
  })

  it('a second Pay while the first submission is about to charge (claimed, not yet marked): 409 "being processed", never the form', async () => {
    const { url, statusToken } = await newCheckout()
    const checkout = (await stack.payments.Checkout.findOne({ statusTokenHash: createHash('sha256').update(statusToken).digest('hex') }).lean())!
    // the first submission's claim, the moment before it marks the checkout processing
    await stack.payments.Settlement.create({ _id: checkout._id, environment: checkout.environment, appDid: checkout.appDid, by: 'payment', claimedAt: new Date(), processor: 'test', recordTid: null, outcome: null, settledAt: null, awaiting: true })
    const again = await postForm(`${url}/pay`, card('4242424242424242'))
    const text = expectPage(again, 409)
    expect(text).toContain('Your payment is being processed')
    expect(text).toContain('Please do not pay again')
    expect(text).not.toContain('id="pay-form"')
  })
})

describe('canceling', () => {
  it('303 to the cancel URL with svc_checkout=canceled; status failed; the page says canceled; paying is refused', async () => {
    const { url, statusToken } = await newCheckout()
    expectRedirect(await postForm(`${url}/cancel`), `${CANCEL_URL}?svc_checkout=canceled`)
    expect(await statusOf(statusToken)).toEqual({ status: 'failed', failureReason: 'canceled' })
    expect(expectPage(await getPage(url), 200)).toContain('Checkout canceled')
    expect(expectPage(await postForm(`${url}/pay`, card('4242424242424242')), 409)).toContain('Checkout canceled')
    expect(expectPage(await postForm(`${url}/cancel`), 409)).toContain('Checkout canceled')
  })
})

describe('expiry', () => {
  it('an abandoned checkout shows as expired and cannot be paid', async () => {
    const { url, statusToken } = await newCheckout()
    await stack.payments.Checkout.updateOne(
      { statusTokenHash: createHash('sha256').update(statusToken).digest('hex') },
      { $set: { expiresAt: new Date(Date.now() - 1000) } },
    )
    const page = await getPage(url)
    expect(expectPage(page, 200)).toContain('This checkout has expired')
    expect(page.text).toContain(`href="${CANCEL_URL}?svc_checkout=failed"`)
    expect(expectPage(await postForm(`${url}/pay`, card('4242424242424242')), 409)).toContain('This checkout has expired')
    expect(await statusOf(statusToken)).toEqual({ status: 'failed', failureReason: 'expired' })
  })
})
