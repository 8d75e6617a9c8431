/**
 * The hosted checkout in a real headless Chromium against the whole stack: the buyer opens the page the app sent
 * them to, reads recipient, description, amount, fee and total, types a test card, presses Pay, and lands back on
 * the app (a tiny local HTTP server), whose backend then reads the payment through network.svc.payment.status.
 * Also the decline path and the cancel link, with the security headers really enforced by the browser (no CSP
 * violation, no Referer carrying the browser token to the app).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Browser, Page } from 'playwright-core'
import { launchChromium } from './browser'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectOk, updateConfig } from './helpers'
import { initiate, paymentStatus, product } from './payment-helpers'

interface AppHit {
  path: string
  referer: string | undefined
}

let stack: TestStack
let app: TestApp
let browser: Browser
let appServer: Server
let appOrigin: string
const appHits: AppHit[] = []

beforeAll(async () => {
  // the app's web front: records what reaches it and says where the buyer landed
  appServer = createServer((req, res) => {
    appHits.push({ path: req.url ?? '', referer: req.headers.referer })
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(`<!doctype html><title>The app</title><h1 id="app">Back at the app</h1>`)
  })
  await new Promise<void>((resolve) => appServer.listen(0, '127.0.0.1', resolve))
  appOrigin = `http://127.0.0.1:${(appServer.address() as AddressInfo).port}`

  stack = await startStack('checkout-browser')
  app = await stack.newApp({ appUrl: appOrigin })
  expectOk(await updateConfig(stack, app, { environment: 'test', ticketFee: { passToBuyer: true } }))
  browser = await launchChromium()
})
afterAll(async () => {
  await browser?.close()
  await stack?.stop()
  await new Promise((resolve) => appServer?.close(resolve))
})

const nextYear = String((new Date().getUTCFullYear() + 2) % 100).padStart(2, '0')

/** A self-sale of $12.34 (+ the service fee the buyer pays); what the app's backend would hold. */
async function newCheckout(appOrderId: string) {
  const body = expectOk(
    await initiate(
      stack,
      app,
      product(app.did, {
        amount: 1234,
        appOrderId,
        description: 'Sticker pack & "holo" edition',
        returnUrl: `${appOrigin}/orders/${appOrderId}/done?from=checkout`,
        cancelUrl: `${appOrigin}/orders/${appOrderId}/cart`,
      }),
    ),
  )
  return { statusToken: body.token as string, url: body.url as string }
}

/** A fresh browser context (no shared state between buyers) that records CSP violations and console errors. */
async function buyerPage(): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 } })
  const page = await context.newPage()
  const problems: string[] = []
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy|Refused to/i.test(msg.text())) problems.push(msg.text())
  })
  page.on('pageerror', (err) => problems.push(String(err)))
  return { page, problems }
}

async function fillCard(page: Page, number: string) {
  await page.fill('#number', number)
  await page.fill('#expiry', `12/${nextYear}`)
  await page.fill('#cvc', '123')
  await page.fill('#name', 'Bea Buyer')
}

it('pays with 4242 4242 4242 4242 and lands on the app; the app then reads completed with a record ref', async () => {
  const { statusToken, url } = await newCheckout(`order-ok-${Date.now()}`)
  const { page, problems } = await buyerPage()
  const response = await page.goto(url)
  expect(response?.status()).toBe(200)

  // what the buyer sees (the fee is the registered 2.5 % + 30 ¢: 31 + 30 = 61 ¢)
  await expect(page.locator('.banner').innerText()).resolves.toMatch(/TEST MODE/i)
  expect(await page.textContent('#recipient-did')).toBe(app.did)
  expect(await page.textContent('#description')).toBe('Sticker pack & "holo" edition')
  expect(await page.textContent('#amount')).toBe('$12.34')
  expect(await page.locator('.summary').innerText()).toContain('Service fee')
  expect(await page.textContent('#buyer-fee')).toBe('$0.61')
  expect(await page.textContent('#total')).toBe('$12.95')
  expect(await page.textContent('#pay')).toBe('Pay $12.95')
  expect(await page.locator('#test-cards').innerText()).toContain('4242 4242 4242 4242')
  expect(await page.title()).toBe('Pay $12.95')

  await fillCard(page, '4242 4242 4242 4242')
  await Promise.all([page.waitForURL((u) => u.origin === appOrigin), page.click('#pay')])

  const landed = new URL(page.url())
  expect(landed.pathname).toMatch(/^\/orders\/order-ok-\d+\/done$/)
  expect(Object.fromEntries(landed.searchParams)).toEqual({ from: 'checkout', svc_checkout: 'completed' })
  expect(await page.textContent('#app')).toBe('Back at the app')
  // the browser token never reached the app as a referrer
  const hit = appHits.find((h) => h.path === `${landed.pathname}${landed.search}`)
  expect(hit).toBeDefined()
  expect(hit!.referer).toBeUndefined()
  expect(problems).toEqual([])

  // the app's backend polls the status with its own token
  const status = expectOk(await paymentStatus(stack, app, statusToken))
  expect(status).toEqual({ status: 'completed', ref: { uri: expect.stringMatching(/^at:\/\/did:web:svc\.test\/money\.svc\.payment\.record\//), cid: expect.any(String) } })

  // back on the checkout link: the payment is complete and cannot be repeated
  await page.goto(url)
  expect(await page.textContent('#status-heading')).toBe('Payment complete')
  expect(await page.locator('#pay').count()).toBe(0)
  await page.context().close()
})

it('4000 0000 0000 0002 is declined: the page says so, the status is failed, and the link returns to the app', async () => {
  const { statusToken, url } = await newCheckout(`order-declined-${Date.now()}`)
  const { page, problems } = await buyerPage()
  await page.goto(url)
  await fillCard(page, '4000 0000 0000 0002')
  await Promise.all([page.waitForLoadState('load'), page.waitForSelector('#status-message'), page.click('#pay')])

  expect(new URL(page.url()).origin).toBe(stack.checkoutUrl)
  expect(await page.innerText('#status-message')).toBe('Payment declined: Your card was declined.')
  expect(expectOk(await paymentStatus(stack, app, statusToken))).toEqual({ status: 'failed', failureReason: 'declined' })

  await Promise.all([page.waitForURL((u) => u.origin === appOrigin), page.click('#return')])
  const landed = new URL(page.url())
  expect(landed.pathname).toMatch(/\/cart$/)
  expect(landed.searchParams.get('svc_checkout')).toBe('failed')
  expect(problems).toEqual([])
  await page.context().close()
})

it('a refused card keeps the buyer on the form with the message; then the cancel button returns to the app as canceled', async () => {
  const { statusToken, url } = await newCheckout(`order-cancel-${Date.now()}`)
  const { page, problems } = await buyerPage()
  await page.goto(url)
  await fillCard(page, '4242 4242 4242 4241')
  await Promise.all([page.waitForSelector('#form-error'), page.click('#pay')])
  expect(await page.innerText('#form-error')).toMatch(/card number/i)
  expect(await page.inputValue('#number')).toBe('')
  expect(await page.inputValue('#name')).toBe('Bea Buyer')
  expect(expectOk(await paymentStatus(stack, app, statusToken))).toEqual({ status: 'pending' })

  await Promise.all([page.waitForURL((u) => u.origin === appOrigin), page.click('#cancel')])
  const landed = new URL(page.url())
  expect(landed.pathname).toMatch(/\/cart$/)
  expect(landed.searchParams.get('svc_checkout')).toBe('canceled')
  expect(expectOk(await paymentStatus(stack, app, statusToken))).toEqual({ status: 'failed', failureReason: 'canceled' })
  expect(problems).toEqual([])
  await page.context().close()
})
