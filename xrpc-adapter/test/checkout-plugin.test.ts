/**
 * The hosted checkout plugin against a scripted gateway (no stack): what each state renders, the form → CardInput
 * mapping, every gateway outcome → page or redirect, escaping of upstream values, the security headers on every
 * response, the principal and request id sent, and a browser token that never reaches the logs.
 * checkout-page.test.ts and checkout-browser.test.ts run the same pages against the real payments subgraph.
 */
import { Writable } from 'node:stream'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import pino from 'pino'
import { ContractError } from '@svc/errors'
import type { GatewayClient, GatewayDocument } from '@svc/gateway-client'
import { errorsPlugin } from '../src/plugins/errors'
import { checkoutPagesPlugin, CHECKOUT_PRINCIPAL, redactCheckoutUrl } from '../src/checkout/plugin'
import { readCardForm, scrubCardData } from '../src/checkout/card-form'
import { formatMoney, minorUnitDigits } from '../src/checkout/money'
import { withCheckoutParam, type CheckoutView } from '../src/checkout/views'
import { SECURITY_HEADERS } from '../src/pages/html'

const TOKEN = `cko_test_${'Ab3_-'.repeat(8)}xyz`
const LIVE_TOKEN = `cko_live_${'Zz9_-'.repeat(8)}abc`

function view(overrides: Partial<CheckoutView> = {}): CheckoutView {
  return {
    id: 'chk_1',
    environment: 'test',
    status: 'pending',
    failureReason: null,
    failureMessage: null,
    recipientDid: 'did:plc:ada0000000000000000000',
    recipientName: 'Ada Creator',
    paymentType: 'tip',
    holdId: null,
    description: 'A tip for the stream',
    currency: 'usd',
    amount: 1000,
    serviceFee: 55,
    buyerFee: 55,
    total: 1055,
    returnUrl: 'https://app.example.com/thanks',
    cancelUrl: 'https://app.example.com/cancel',
    expiresAt: '2030-01-02T03:04:05.000Z',
    ...overrides,
  }
}

interface Call {
  document: string
  variables: Record<string, unknown>
  principal: unknown
  requestId: string
}

type Handler = (op: 'checkout' | 'payCheckout' | 'cancelCheckout', variables: Record<string, unknown>) => CheckoutView | Promise<CheckoutView>

function fakeGateway(): GatewayClient & { calls: Call[]; handler: Handler } {
  const g = {
    calls: [] as Call[],
    handler: (() => view()) as Handler,
    async query<T, V>(doc: GatewayDocument<T, V>, vars: V, as: { principal: unknown; requestId: string }) {
      const document = String(doc)
      const variables = vars as Record<string, unknown>
      g.calls.push({ document, variables, principal: as.principal, requestId: as.requestId })
      const op = /payCheckout\(/.test(document) ? 'payCheckout' : /cancelCheckout\(/.test(document) ? 'cancelCheckout' : 'checkout'
      return { [op]: await g.handler(op, variables) } as unknown as T
    },
    async close() {},
  }
  return g
}

let app: FastifyInstance
let gateway: ReturnType<typeof fakeGateway>
const logLines: string[] = []

beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logLines.push(chunk.toString())
      cb()
    },
  })
  const logger = pino({ level: 'trace' }, sink)
  gateway = fakeGateway()
  // as buildCheckoutServer does: the shared logger, req_ ids, the errors plugin at the root
  let n = 0
  app = Fastify({
    loggerInstance: logger.child({ host: 'checkout' }) as FastifyBaseLogger,
    genReqId: () => `req_${(++n).toString(16).padStart(32, '0')}`,
    routerOptions: { ignoreTrailingSlash: true },
  })
  app.addHook('onRequest', async (request, reply) => {
    reply.header('Svc-Request-Id', request.id)
  })
  await app.register(errorsPlugin)
  app.post('/json-elsewhere', async (request) => ({ got: request.body }))
  await app.register(checkoutPagesPlugin, { gateway, payAttempts: { perCheckout: async () => null, perAddress: async () => null } })
  await app.ready()
})
afterAll(async () => {
  await app.close()
})
beforeEach(() => {
  gateway.calls.length = 0
  gateway.handler = () => view()
})

const form = (fields: Record<string, string>) => ({
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  payload: new URLSearchParams(fields).toString(),
})
const goodCard = { number: '4242 4242 4242 4242', expiry: '12 / 34', cvc: '123', name: 'Bea Buyer' }

function expectSecurityHeaders(headers: Record<string, unknown>) {
  for (const [k, v] of Object.entries(SECURITY_HEADERS)) expect(headers[k]).toBe(v)
}

function expectHtml(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number) {
  expect(res.statusCode).toBe(status)
  expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
  expectSecurityHeaders(res.headers)
  expect(res.body.startsWith('<!doctype html>')).toBe(true)
}

/** The page's text without tags (whitespace collapsed), to read what a buyer sees. */
const textOf = (body: string) =>
  body
    .replace(/<style>[\s\S]*?<\/style>/g, '')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/\s+/g, ' ')

it.each(['PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const)('%s on /checkout and /checkout/ is the invalid-link page with the pages\' headers, not the API\'s JSON', async (method) => {
  for (const url of ['/checkout', '/checkout/']) {
    const res = await app.inject({ method, url })
    expectHtml(res, 404)
  }
})

describe('GET /checkout/:token', () => {
  it('renders the payment page of a pending test checkout', async () => {
    const res = await app.inject({ url: `/checkout/${TOKEN}` })
    expectHtml(res, 200)
    const text = textOf(res.body)
    expect(text).toContain('TEST MODE')
    expect(text).toContain('Ada Creator')
    expect(text).toContain('did:plc:ada0000000000000000000')
    expect(text).toContain('A tip for the stream')
    expect(res.body).toMatch(/<dt>Amount<\/dt><dd id="amount">\$10\.00<\/dd>/)
    expect(res.body).toMatch(/<dt>Service fee<\/dt><dd id="buyer-fee">\$0\.55<\/dd>/)
    expect(res.body).toMatch(/<dt>Total<\/dt><dd id="total">\$10\.55<\/dd>/)
    expect(res.body).toContain(`<form method="post" action="/checkout/${TOKEN}/pay"`)
    expect(res.body).toContain(`<form method="post" action="/checkout/${TOKEN}/cancel"`)
    expect(res.body).toContain('<button type="submit" class="btn" id="pay">Pay $10.55</button>')
    for (const name of ['number', 'expiry', 'cvc', 'name']) expect(res.body).toContain(`name="${name}"`)
    expect(text).toContain('4242 4242 4242 4242 (succeeds)')
    expect(text).toContain('4000 0000 0000 0002 (declined)')
    expect(text).toContain('expires Jan 2, 2030, 3:04 AM UTC')
    expect(res.headers['svc-request-id']).toMatch(/^req_[0-9a-f]{32}$/)
    // one query, as the checkout service, with the request id
    expect(gateway.calls).toHaveLength(1)
    expect(gateway.calls[0]).toMatchObject({ variables: { browserToken: TOKEN }, principal: { kind: 'service', name: 'checkout' }, requestId: res.headers['svc-request-id'] })
    expect(gateway.calls[0]!.document).toMatch(/checkout\(browserToken: \$browserToken\)/)
    expect(CHECKOUT_PRINCIPAL).toEqual({ kind: 'service', name: 'checkout' })
  })

  it('has no fee line when the buyer pays no fee, and no test banner or test cards in live', async () => {
    gateway.handler = () => view({ environment: 'live', buyerFee: 0, total: 1000 })
    const res = await app.inject({ url: `/checkout/${LIVE_TOKEN}` })
    expectHtml(res, 200)
    expect(res.body).not.toContain('Service fee')
    expect(res.body).not.toContain('TEST MODE')
    expect(res.body).not.toContain('4242')
    expect(res.body).toContain('id="pay">Pay $10.00</button>')
  })

  it('formats amounts with the currency minor-unit digits', async () => {
    gateway.handler = () => view({ currency: 'jpy', amount: 1000, buyerFee: 30, total: 1030, recipientName: null })
    const res = await app.inject({ url: `/checkout/${TOKEN}` })
    expect(res.body).toContain('id="pay">Pay ¥1,030</button>')
    expect(res.body).toContain('<h1 id="recipient">did:plc:ada0000000000000000000</h1>')
    expect(formatMoney(1055, 'usd')).toBe('$10.55')
    expect(formatMoney(1055, 'eur')).toBe('€10.55')
    expect(formatMoney(1000, 'jpy')).toBe('¥1,000')
    expect(formatMoney(1500, 'kwd')).toMatch(/^KWD\s1\.500$/u)
    expect(formatMoney(5, 'usd')).toBe('$0.05')
    expect(formatMoney(100_000_000, 'usd')).toBe('$1,000,000.00')
    expect(minorUnitDigits('JPY')).toBe(0)
    expect(minorUnitDigits('bhd')).toBe(3)
    expect(minorUnitDigits('gbp')).toBe(2)
  })

  it('escapes what the app and the recipient wrote', async () => {
    gateway.handler = () =>
      view({ description: '<script>alert("d")</script>', recipientName: '"><img src=x onerror=alert(1)>', status: 'completed', returnUrl: 'javascript:alert(1)' })
    const res = await app.inject({ url: `/checkout/${TOKEN}` })
    expectHtml(res, 200)
    expect(res.body).not.toMatch(/<script|<img/i)
    expect(res.body).toContain('&lt;script&gt;alert(&quot;d&quot;)&lt;/script&gt;')
    expect(res.body).toContain('&quot;&gt;&lt;img src=x onerror=alert(1)&gt;')
    expect(res.body).not.toContain('javascript:')
    expect(res.body).toContain('id="return" href="#"')
  })

  it.each([
    ['a short token', 'cko_test_abc'],
    ['a status token', `pst_test_${'A'.repeat(43)}`],
    ['a token with markup', `cko_test_<script>${'A'.repeat(35)}`],
    ['a token one character too long', `${TOKEN}A`],
    ['another environment', `cko_prod_${'A'.repeat(43)}`],
  ])('%s → the invalid-link page, 404, without asking the gateway', async (_label, token) => {
    const res = await app.inject({ url: `/checkout/${encodeURIComponent(token)}` })
    expectHtml(res, 404)
    expect(textOf(res.body)).toContain('This checkout link is not valid')
    expect(res.body).not.toContain(token.slice(9, 20))
    expect(gateway.calls).toHaveLength(0)
  })

  it.each(['NotFound', 'InvalidToken'] as const)('%s from the gateway → the invalid-link page, 404', async (code) => {
    gateway.handler = () => {
      throw new ContractError(code, 'no checkout for this token')
    }
    const res = await app.inject({ url: `/checkout/${TOKEN}` })
    expectHtml(res, 404)
    expect(textOf(res.body)).toContain('This checkout link is not valid')
    expect(res.body).not.toContain(TOKEN)
  })

  it('a completed checkout: "Payment complete" and a link back to the return URL', async () => {
    gateway.handler = () => view({ status: 'completed', returnUrl: 'https://app.example.com/thanks?order=7&x=a%20b#top' })
    const res = await app.inject({ url: `/checkout/${TOKEN}` })
    expectHtml(res, 200)
    expect(textOf(res.body)).toContain('Payment complete')
    expect(textOf(res.body)).toContain('You paid $10.55 to Ada Creator.')
    expect(res.body).toContain('href="https://app.example.com/thanks?order=7&amp;x=a%20b&amp;svc_checkout=completed#top"')
    expect(res.body).not.toContain('id="pay"')
  })

  it.each([
    ['declined', 'Your card was declined.', 'Payment declined: Your card was declined.', 'svc_checkout=failed'],
    ['expired', null, 'This checkout has expired', 'svc_checkout=failed'],
    ['canceled', null, 'Checkout canceled', 'svc_checkout=canceled'],
    ['processor_error', 'The processor is unavailable.', 'Payment failed: The processor is unavailable.', 'svc_checkout=failed'],
  ])('a failed checkout (%s) says why and links to the cancel URL', async (reason, message, shown, param) => {
    gateway.handler = () => view({ status: 'failed', failureReason: reason, failureMessage: message })
    const res = await app.inject({ url: `/checkout/${TOKEN}` })
    expectHtml(res, 200)
    expect(textOf(res.body)).toContain(shown)
    expect(res.body).toContain(`href="https://app.example.com/cancel?${param}"`)
    expect(res.body).not.toContain('id="pay"')
  })

  it('a processing checkout says it is being processed', async () => {
    gateway.handler = () => view({ status: 'processing' })
    const res = await app.inject({ url: `/checkout/${TOKEN}` })
    expectHtml(res, 200)
    expect(textOf(res.body)).toContain('Your payment is being processed')
    expect(res.body).not.toContain('id="pay"')
  })

  it.each([
    ['ServiceUnavailable', 503, 'Checkout is temporarily unavailable'],
    ['InternalServerError', 500, 'Something went wrong'],
    ['ProcessorError', 502, 'The payment processor did not answer'],
    ['NotAllowed', 500, 'Something went wrong'],
  ] as const)('%s from the gateway → an HTML %s page with the request id', async (code, status, title) => {
    gateway.handler = () => {
      throw new ContractError(code, 'upstream says no')
    }
    const res = await app.inject({ url: `/checkout/${TOKEN}` })
    expectHtml(res, status)
    expect(textOf(res.body)).toContain(title)
    expect(res.body).toContain(`<code>${res.headers['svc-request-id']}</code>`)
    expect(res.body).not.toContain('upstream says no')
  })

  it('an unexpected exception → an HTML 500 page, never JSON', async () => {
    gateway.handler = () => {
      throw new TypeError('boom')
    }
    const res = await app.inject({ url: `/checkout/${TOKEN}` })
    expectHtml(res, 500)
    expect(res.body).not.toContain('boom')
  })
})

describe('POST /checkout/:token/pay', () => {
  it('sends the card as CardInput and redirects a completed payment to the return URL (303)', async () => {
    gateway.handler = (op) => view(op === 'payCheckout' ? { status: 'completed', returnUrl: 'https://app.example.com/thanks?order=7' } : {})
    const res = await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/pay`, ...form(goodCard) })
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe('https://app.example.com/thanks?order=7&svc_checkout=completed')
    expectSecurityHeaders(res.headers)
    // the checkout is read first (a link naming none gets no attempt count of its own), then paid
    expect(gateway.calls.map((c) => /payCheckout/.test(c.document))).toEqual([false, true])
    expect(gateway.calls[1]).toMatchObject({
      variables: { browserToken: TOKEN, card: { number: '4242424242424242', expMonth: 12, expYear: 2034, cvc: '123', name: 'Bea Buyer' } },
      principal: { kind: 'service', name: 'checkout' },
      requestId: res.headers['svc-request-id'],
    })
    expect(gateway.calls[1]!.document).toMatch(/payCheckout\(browserToken: \$browserToken, card: \$card\)/)
  })

  it('accepts month and year as two fields, and no name', async () => {
    gateway.handler = (op) => view(op === 'payCheckout' ? { status: 'completed' } : {})
    const res = await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/pay`, ...form({ number: '4242-4242-4242-4242', expMonth: '3', expYear: '2031', cvc: '999' }) })
    expect(res.statusCode).toBe(303)
    expect(gateway.calls[1]!.variables.card).toEqual({ number: '4242424242424242', expMonth: 3, expYear: 2031, cvc: '999', name: null })
  })

  it('a declined card → 200 "Payment declined: <message>" with the cancel URL', async () => {
    gateway.handler = (op) => view(op === 'payCheckout' ? { status: 'failed', failureReason: 'declined', failureMessage: 'Your card was declined.' } : {})
    const res = await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/pay`, ...form(goodCard) })
    expectHtml(res, 200)
    expect(textOf(res.body)).toContain('Payment declined: Your card was declined.')
    expect(res.body).toContain('href="https://app.example.com/cancel?svc_checkout=failed"')
  })

  it('InvalidRequest → 400, the form again with the message, never the card number or CVC', async () => {
    gateway.handler = (op) => {
      if (op === 'payCheckout') throw new ContractError('InvalidRequest', 'card number 4242424242424241 is not valid (cvc 123 checked)')
      return view()
    }
    const res = await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/pay`, ...form({ ...goodCard, number: '4242 4242 4242 4241' }) })
    expectHtml(res, 400)
    expect(res.body).toContain('id="form-error"')
    expect(textOf(res.body)).toContain('card number •••• is not valid (cvc ••• checked)')
    expect(res.body).not.toMatch(/4242 ?4242 ?4242 ?4241/)
    expect(res.body).toContain('id="pay">Pay $10.55</button>')
    // the name is kept, the number and the CVC are not
    expect(res.body).toContain('value="Bea Buyer"')
    expect(res.body).not.toMatch(/name="number"[^>]*value=/)
    expect(res.body).not.toMatch(/name="cvc"[^>]*value=/)
    expect(gateway.calls.map((c) => /payCheckout/.test(c.document))).toEqual([false, true, false])
  })

  it.each([
    [{ ...goodCard, number: '' }, 'Enter your card number.'],
    [{ ...goodCard, expiry: '1234567' }, 'Enter the expiry date as MM/YY.'],
    [{ ...goodCard, expiry: '13/30' }, 'Enter a valid expiry month (01 to 12).'],
    [{ ...goodCard, cvc: '' }, 'Enter the security code (CVC).'],
    [{}, 'Enter your card number.'],
  ])('a form that cannot become a CardInput → 400 without calling payCheckout (%#)', async (fields, message) => {
    const res = await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/pay`, ...form(fields as Record<string, string>) })
    expectHtml(res, 400)
    expect(textOf(res.body)).toContain(message)
    expect(gateway.calls.some((c) => /payCheckout/.test(c.document))).toBe(false)
  })

  it('CheckoutClosed → 409 with the current state', async () => {
    gateway.handler = (op) => {
      if (op === 'payCheckout') throw new ContractError('CheckoutClosed', 'already completed')
      return view({ status: 'completed' })
    }
    const res = await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/pay`, ...form(goodCard) })
    expectHtml(res, 409)
    expect(textOf(res.body)).toContain('Payment complete')
  })

  it('a refused form on a checkout that closed meanwhile → 409 with its state', async () => {
    gateway.handler = () => view({ status: 'failed', failureReason: 'expired' })
    const res = await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/pay`, ...form({ number: '' }) })
    expectHtml(res, 409)
    expect(textOf(res.body)).toContain('This checkout has expired')
  })

  it('unknown token → 404 page; malformed token → 404 page without a gateway call', async () => {
    gateway.handler = () => {
      throw new ContractError('NotFound', 'no such checkout')
    }
    expectHtml(await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/pay`, ...form(goodCard) }), 404)
    gateway.calls.length = 0
    expectHtml(await app.inject({ method: 'POST', url: '/checkout/nope/pay', ...form(goodCard) }), 404)
    expect(gateway.calls).toHaveLength(0)
  })

  it('only forms: a JSON body → 415 HTML page; the rest of the host still parses JSON', async () => {
    const res = await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/pay`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(goodCard) })
    expectHtml(res, 415)
    expect(gateway.calls).toHaveLength(0)
    const other = await app.inject({ method: 'POST', url: '/json-elsewhere', headers: { 'content-type': 'application/json' }, payload: '{"a":1}' })
    expect(other.json()).toEqual({ got: { a: 1 } })
  })

  it('GET on the action URL leads back to the page', async () => {
    const res = await app.inject({ url: `/checkout/${TOKEN}/pay` })
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe(`/checkout/${TOKEN}`)
    expectSecurityHeaders(res.headers)
  })
})

describe('POST /checkout/:token/cancel', () => {
  it('cancels and redirects to the cancel URL (303, svc_checkout=canceled)', async () => {
    gateway.handler = (op) => view(op === 'cancelCheckout' ? { status: 'failed', failureReason: 'canceled' } : {})
    const res = await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/cancel`, ...form({}) })
    expect(res.statusCode).toBe(303)
    expect(res.headers.location).toBe('https://app.example.com/cancel?svc_checkout=canceled')
    expectSecurityHeaders(res.headers)
    expect(gateway.calls[0]).toMatchObject({ variables: { browserToken: TOKEN }, principal: { kind: 'service', name: 'checkout' } })
    expect(gateway.calls[0]!.document).toMatch(/cancelCheckout\(browserToken: \$browserToken\)/)
  })

  it('works without a body too', async () => {
    gateway.handler = (op) => view(op === 'cancelCheckout' ? { status: 'failed', failureReason: 'canceled' } : {})
    const res = await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/cancel` })
    expect(res.statusCode).toBe(303)
  })

  it('CheckoutClosed (already paid) → 409 with the completed page, not a redirect', async () => {
    gateway.handler = (op) => {
      if (op === 'cancelCheckout') throw new ContractError('CheckoutClosed', 'already completed')
      return view({ status: 'completed' })
    }
    const res = await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/cancel`, ...form({}) })
    expectHtml(res, 409)
    expect(textOf(res.body)).toContain('Payment complete')
  })
})

describe('anything else under /checkout', () => {
  it.each([
    ['GET', '/checkout'],
    ['GET', '/checkout/'],
    ['GET', `/checkout/${TOKEN}/receipt`],
    ['POST', `/checkout/${TOKEN}/refund`],
    ['PUT', `/checkout/${TOKEN}`],
    ['DELETE', `/checkout/${TOKEN}/pay`],
    ['HEAD', '/checkout/x/y'],
  ] as const)('%s %s → the invalid-link page', async (method, url) => {
    const res = await app.inject({ method, url })
    expect(res.statusCode).toBe(404)
    expectSecurityHeaders(res.headers)
    if (method !== 'HEAD') {
      expectHtml(res, 404)
      expect(res.body).not.toContain(TOKEN)
    }
  })

  it('leaves the rest of the host alone (JSON 404 outside /checkout)', async () => {
    const res = await app.inject({ url: '/elsewhere' })
    expect(res.statusCode).toBe(404)
    expect(res.json()).toMatchObject({ error: 'NotFound' })
    expect(res.headers['content-security-policy']).toBeUndefined()
  })
})

describe('logs', () => {
  it('never contain a browser token; checkout URLs are logged as /checkout/:token', async () => {
    logLines.length = 0
    gateway.handler = (op) => {
      if (op === 'payCheckout') throw new ContractError('InternalServerError', `failed for ${TOKEN}`)
      return view()
    }
    await app.inject({ url: `/checkout/${TOKEN}?utm=${TOKEN}` })
    await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/pay`, ...form(goodCard) })
    await app.inject({ method: 'POST', url: `/checkout/${TOKEN}/cancel` })
    await app.inject({ method: 'PUT', url: `/checkout/${TOKEN}` })
    await app.inject({ url: `/checkout/${TOKEN}/a/b` })
    await app.inject({ url: `/checkout/${TOKEN}/pay` })
    gateway.handler = () => {
      throw new TypeError('boom')
    }
    await app.inject({ url: `/checkout/${TOKEN}` })
    const all = logLines.join('')
    expect(logLines.length).toBeGreaterThan(10)
    expect(all).not.toContain(TOKEN)
    expect(all).not.toContain(TOKEN.slice(9))
    expect(all).not.toContain('4242424242424242')
    const urls = logLines.map((l) => JSON.parse(l)).filter((l) => l.req).map((l) => l.req.url)
    expect(new Set(urls)).toEqual(new Set(['/checkout/:token', '/checkout/:token/pay', '/checkout/:token/cancel', '/checkout/:token/a/b']))
  })

  it('redactCheckoutUrl hides the token and the query of checkout URLs only', () => {
    expect(redactCheckoutUrl(`/checkout/${TOKEN}`)).toBe('/checkout/:token')
    expect(redactCheckoutUrl(`/checkout/${TOKEN}/pay?x=1`)).toBe('/checkout/:token/pay')
    expect(redactCheckoutUrl(`//checkout//${TOKEN}/pay`)).toBe('//checkout//:token/pay')
    expect(redactCheckoutUrl(`/CHECKOUT/${TOKEN}`)).toBe('/CHECKOUT/:token')
    expect(redactCheckoutUrl(`/%63heckout/${TOKEN}`)).toBe('/checkout/:token')
    expect(redactCheckoutUrl('/checkout')).toBe('/checkout')
    expect(redactCheckoutUrl('/checkout?t=1')).toBe('/checkout')
    expect(redactCheckoutUrl('/xrpc/network.svc.payment.status?token=x')).toBe('/xrpc/network.svc.payment.status?token=x')
    expect(redactCheckoutUrl('/checkoutx/abc')).toBe('/checkoutx/abc')
    expect(redactCheckoutUrl('/checkout/%zz')).toBe('/checkout/:token')
  })
})

describe('helpers', () => {
  it('withCheckoutParam keeps the app query byte for byte and replaces an existing svc_checkout', () => {
    expect(withCheckoutParam('https://a.example/x', 'completed')).toBe('https://a.example/x?svc_checkout=completed')
    expect(withCheckoutParam('https://a.example/x?', 'completed')).toBe('https://a.example/x?svc_checkout=completed')
    expect(withCheckoutParam('https://a.example/x?q=a+b&r=%2F#frag', 'canceled')).toBe('https://a.example/x?q=a+b&r=%2F&svc_checkout=canceled#frag')
    expect(withCheckoutParam('https://a.example/x?svc_checkout=old&a=1', 'completed')).toBe('https://a.example/x?svc_checkout=completed&a=1')
    expect(withCheckoutParam('javascript:alert(1)', 'completed')).toBe('#')
  })

  it('readCardForm and scrubCardData', () => {
    expect(readCardForm({ number: '4242 4242 4242 4242', expiry: '0130', cvc: '1', name: '' })).toEqual({
      ok: true,
      nameOnCard: null,
      card: { number: '4242424242424242', expMonth: 1, expYear: 2030, cvc: '1', name: null },
    })
    expect(readCardForm({ number: '4242', expiry: '01/2031', cvc: '12' })).toMatchObject({ ok: true, card: { expMonth: 1, expYear: 2031 } })
    // a repeated field is not a value
    expect(readCardForm({ number: ['4242', '4242'], expiry: '01/31', cvc: '1' })).toMatchObject({ ok: false })
    expect(readCardForm(undefined)).toMatchObject({ ok: false, message: 'Enter your card number.' })
    expect(scrubCardData('bad 4242424242424242 and 123 not 1234', { number: '4242424242424242', cvc: '123' })).toBe('bad •••• and ••• not 1234')
    expect(scrubCardData('x', { number: '', cvc: 'ab' })).toBe('x')
  })
})
