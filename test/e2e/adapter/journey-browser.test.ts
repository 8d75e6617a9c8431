/**
 * The whole journey of the payments issue in a real headless Chromium: an app backend asks a creator to approve
 * it (XRPC), the creator opens the sign-in link, completes payout onboarding (test) and accepts the app's terms on
 * the onboarding page, and is sent back to the app's origin; the app sees the connection ready, starts a checkout,
 * a buyer pays on the hosted page and lands on the app, and the app's backend polls the payment to completed, with
 * the authorization and payment events in the outboxes.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Browser } from 'playwright-core'
import { launchChromium } from './browser'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectOk } from './helpers'
import { getApproval, initiate, paymentStatus, product, requestApproval } from './payment-helpers'

let stack: TestStack
let app: TestApp
let browser: Browser
let appServer: Server
let appOrigin: string

beforeAll(async () => {
  appServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end('<!doctype html><title>The app</title><h1 id="app">Back at the app</h1>')
  })
  await new Promise<void>((resolve) => appServer.listen(0, '127.0.0.1', resolve))
  appOrigin = `http://127.0.0.1:${(appServer.address() as AddressInfo).port}`
  stack = await startStack('journey-browser')
  app = await stack.newApp({ appUrl: appOrigin })
  browser = await launchChromium()
})
afterAll(async () => {
  await browser?.close()
  await stack?.stop()
  await new Promise((resolve) => appServer?.close(resolve))
})

it('approval request → creator onboards and accepts in the dashboard → checkout paid in the browser → completed', async () => {
  // 1. the app asks the creator
  const creator = await stack.newActor({ environment: 'test', displayName: 'Ada Creator' })
  const request = expectOk(
    await requestApproval(stack, app, {
      recipientDid: creator.did,
      environment: 'test',
      paymentTypes: ['tip'],
      feeShareBps: 250,
      requestReason: 'Tips from your viewers',
      setupReturnUrl: `${appOrigin}/creators/connected`,
    }),
  )
  expect(request.status).toBe('pending')
  expect(expectOk(await getApproval(stack, app, { recipientDid: creator.did }))).toMatchObject({ status: 'pending', paymentSetup: 'not-checked' })

  // 2. the creator signs in (the link leads to the app's onboarding URL), onboards payouts and accepts the terms
  const context = await browser.newContext()
  const page = await context.newPage()
  const signIn = `${await stack.dashboardLoginUrl(creator.did, 'test')}?next=${encodeURIComponent(new URL(request.onboardingUrl).pathname)}`
  await page.goto(signIn)
  expect(await page.textContent('#actor')).toBe(creator.did)
  await Promise.all([page.waitForURL((u) => u.pathname === `/dashboard/onboarding/${request.id}`), page.click('#sign-in')])
  expect(await page.textContent('#terms-payment-types')).toBe('tip')
  expect(await page.textContent('#terms-fee-share')).toContain('2.5%')
  expect(await page.textContent('#payout-status')).toBe('onboarding-required')
  await Promise.all([page.waitForURL((u) => u.pathname === `/dashboard/onboarding/${request.id}`), page.click('#complete-payout-onboarding')])
  expect(await page.textContent('#payout-status')).toBe('ready')
  await Promise.all([page.waitForURL((u) => u.origin === appOrigin), page.click('#accept')])
  const back = new URL(page.url())
  expect(back.pathname).toBe('/creators/connected')
  expect(Object.fromEntries(back.searchParams)).toEqual({ svc_approval: 'approved', approval_id: request.id })
  await context.close()

  // 3. the app re-reads the connection: approved and ready; an authorization event waits in the apps outbox
  expect(expectOk(await getApproval(stack, app, { recipientDid: creator.did }))).toMatchObject({ status: 'approved', paymentSetup: 'ready' })
  expect(await stack.models.Outbox.countDocuments({ type: 'app.authorization.granted', appDid: app.did, 'data.approvalId': request.id })).toBe(1)

  // 4. a buyer pays the creator through the hosted checkout
  const { token, url } = expectOk(
    await initiate(stack, app, product(creator.did, { amount: 700, appOrderId: 'journey-1', returnUrl: `${appOrigin}/tips/journey-1/thanks`, cancelUrl: `${appOrigin}/tips` })),
  )
  expect(expectOk(await paymentStatus(stack, app, token))).toEqual({ status: 'pending' })
  const buyer = await (await browser.newContext()).newPage()
  await buyer.goto(url)
  expect(await buyer.textContent('#recipient')).toBe('Ada Creator')
  expect(await buyer.textContent('#amount')).toBe('$7.00')
  await buyer.fill('#number', '4242 4242 4242 4242')
  await buyer.fill('#expiry', `12/${String((new Date().getUTCFullYear() + 2) % 100).padStart(2, '0')}`)
  await buyer.fill('#cvc', '123')
  await Promise.all([buyer.waitForURL((u) => u.origin === appOrigin), buyer.click('#pay')])
  expect(new URL(buyer.url()).pathname).toBe('/tips/journey-1/thanks')

  // 5. the app's backend polls to completed, with the record's AT-URI and CID; one payment.completed event
  const done = expectOk(await paymentStatus(stack, app, token))
  expect(done).toEqual({ status: 'completed', ref: { uri: expect.stringMatching(/^at:\/\/did:web:svc\.test\/money\.svc\.payment\.record\//), cid: expect.any(String) } })
  const events = await stack.payments.Outbox.find({ type: 'payment.completed', appDid: app.did }).lean()
  expect(events).toHaveLength(1)
  expect(events[0]!.data).toMatchObject({ paymentUri: done.ref.uri, recipientDid: creator.did, amount: 700, appOrderId: 'journey-1' })
})
