/**
 * Helpers of the approval, dashboard and payment journeys: real HTTP to the stack's XRPC host and to the
 * dashboard and checkout pages on the checkout host, as an app backend and a creator's browser would.
 * Not a test file itself.
 */
import { randomBytes } from 'node:crypto'
import { encodeProduct, type CheckoutProduct } from '@svc/checkout-product'
import { DASHBOARD_COOKIE } from '@svc/dashboard-session'
import type { TestApp, TestStack } from '../../stack'
import { bearer, httpRequest, xrpcGet, xrpcPost, type HttpResult } from './helpers'

export const REQUEST_APPROVAL = 'money.svc.app.requestRecipientApproval'
export const GET_APPROVAL = 'money.svc.app.getRecipientApproval'
export const INITIATE = 'network.svc.payment.initiate'
export const STATUS = 'network.svc.payment.status'

export async function requestApproval(stack: TestStack, app: TestApp, body: Record<string, unknown>): Promise<HttpResult> {
  return xrpcPost(stack, REQUEST_APPROVAL, body, bearer(await app.jwt(REQUEST_APPROVAL)))
}

export async function getApproval(stack: TestStack, app: TestApp, params: Record<string, string>): Promise<HttpResult> {
  return xrpcGet(stack, GET_APPROVAL, params, bearer(await app.jwt(GET_APPROVAL)))
}

export async function initiate(stack: TestStack, app: TestApp, product: string, extra: Record<string, unknown> = {}): Promise<HttpResult> {
  return xrpcPost(stack, INITIATE, { product, ...extra }, bearer(await app.jwt(INITIATE)))
}

export async function paymentStatus(stack: TestStack, app: TestApp, token: string | undefined): Promise<HttpResult> {
  return xrpcGet(stack, STATUS, token === undefined ? {} : { token }, bearer(await app.jwt(STATUS)))
}

/** A product for `recipientDid` with a fresh order id unless given. */
export function product(recipientDid: string, fields: Partial<CheckoutProduct> = {}): string {
  return encodeProduct({
    recipientDid,
    paymentType: 'tip',
    amount: 500,
    currency: 'usd',
    appOrderId: `order-${randomBytes(6).toString('hex')}`,
    description: 'A tip for the stream',
    returnUrl: 'https://app.example.com/thanks',
    cancelUrl: 'https://app.example.com/cancel',
    ...fields,
  } as CheckoutProduct)
}

/** The value of a named hidden input in a page. */
export function hiddenField(page: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(page)
  if (!m) throw new Error(`no ${name} field in the page`)
  return m[1]!.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>')
}

/** GET a dashboard page as a signed-in creator. */
export async function dashboardGet(stack: TestStack, cookie: string, path: string): Promise<HttpResult> {
  return httpRequest(`${stack.checkoutUrl}${path}`, { headers: { cookie }, redirect: 'manual' })
}

/** POST a dashboard form as a signed-in creator (no redirects followed). */
export async function dashboardPost(stack: TestStack, cookie: string | null, path: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<HttpResult> {
  return httpRequest(`${stack.checkoutUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}), ...headers },
    body: new URLSearchParams(form).toString(),
    redirect: 'manual',
  })
}

/**
 * The creator opens a sign-in link (`next` a dashboard path) and presses its Sign in button: the page's POST, with
 * the nonce of the cookie the page set. The answer of that POST, and the session cookie it set (null if none).
 */
export async function signInWithLink(loginUrl: string, next?: string): Promise<{ page: HttpResult; signIn: HttpResult; cookie: string | null }> {
  const page = await httpRequest(`${loginUrl}${next ? `?next=${encodeURIComponent(next)}` : ''}`, { redirect: 'manual' })
  const nonceCookie = (page.headers.get('set-cookie') ?? '').split(';')[0]!
  const signIn = await httpRequest(loginUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: nonceCookie },
    body: new URLSearchParams({ next: page.status === 200 ? hiddenField(page.text, 'next') : '', nonce: page.status === 200 ? hiddenField(page.text, 'nonce') : '' }).toString(),
    redirect: 'manual',
  })
  const session = (signIn.headers.get('set-cookie') ?? '').split(/,\s*(?=svc_)/).find((c) => c.startsWith(`${DASHBOARD_COOKIE}=`))
  return { page, signIn, cookie: session ? session.split(';')[0]! : null }
}

/** The creator opens the request's dashboard page and presses one of its buttons (accept posts the terms shown). */
export async function decide(stack: TestStack, cookie: string, approvalId: string, action: 'accept' | 'decline' | 'revoke' | 'block' | 'unblock'): Promise<HttpResult> {
  const page = await dashboardGet(stack, cookie, `/dashboard/approvals/${approvalId}`)
  if (page.status !== 200) throw new Error(`approval page answered ${page.status}`)
  const form: Record<string, string> = { csrf: hiddenField(page.text, 'csrf'), from: 'review' }
  if (action === 'accept') form.termsHash = hiddenField(page.text, 'termsHash')
  return dashboardPost(stack, cookie, `/dashboard/approvals/${approvalId}/${action}`, form)
}

/** A creator (ready unless told) who approved the app for tips and shop in test; returns the creator's DID. */
export async function approvedCreator(
  stack: TestStack,
  app: TestApp,
  opts: { payoutStatus?: 'ready' | 'onboarding-required' | 'pending-verification' | 'restricted'; paymentTypes?: string[]; publicRecords?: boolean } = {},
): Promise<{ did: string; approvalId: string; cookie: string }> {
  const creator = await stack.newActor({ environment: 'test', payoutStatus: opts.payoutStatus ?? 'ready', displayName: 'Ada Creator' })
  const res = await requestApproval(stack, app, {
    recipientDid: creator.did,
    environment: 'test',
    paymentTypes: opts.paymentTypes ?? ['tip', 'shop'],
    ...(opts.publicRecords ? { publicRecords: { enabled: true, defaults: { attestation: 'public' } } } : {}),
  })
  if (res.status !== 200) throw new Error(`requestRecipientApproval answered ${res.status} ${res.text}`)
  const cookie = await stack.dashboardCookie(creator.did, 'test')
  const accepted = await decide(stack, cookie, res.body.id, 'accept')
  if (accepted.status !== 303) throw new Error(`accept answered ${accepted.status} ${accepted.text}`)
  return { did: creator.did, approvalId: res.body.id, cookie }
}

/** The buyer submits the card form of a hosted checkout (no browser): the response of the POST. */
export async function payByForm(url: string, cardNumber: string): Promise<HttpResult> {
  return httpRequest(`${url}/pay`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ number: cardNumber, expMonth: '12', expYear: String(new Date().getFullYear() + 2), cvc: '123', name: 'Bea Buyer' }).toString(),
    redirect: 'manual',
  })
}
