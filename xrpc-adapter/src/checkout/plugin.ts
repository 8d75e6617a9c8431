/**
 * The hosted checkout pages on {checkout_url} (server-rendered HTML, plain forms, no JavaScript):
 *
 *   GET  /checkout/:token          the payment page of a pending checkout, else the page of its state; for a ticket
 *                                  page token (`tkp_…`, a free claim's `ticket.url`), that ticket's page
 *   POST /checkout/:token/pay      card form → payCheckout; completed → 303 to the app's returnUrl (?svc_checkout=completed);
 *                                  past the client address's card-testing limit → the form again, 429; a refused
 *                                  card form past the checkout's → lockCheckout (failed, too_many_attempts), 429
 *   POST /checkout/:token/cancel   cancelCheckout → 303 to the app's cancelUrl (?svc_checkout=canceled)
 *
 * Every call goes through the gateway as the principal `{ kind: 'service', name: 'checkout' }` with the request id.
 * The browser token is a capability: it is never logged (these routes log `/checkout/:token…`), never shown on the
 * invalid-link page, and never sent as a referrer (Referrer-Policy: no-referrer on every response of this scope).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { createHash } from 'node:crypto'
import formbody from '@fastify/formbody'
import { ContractError } from '@svc/errors'
import type { GatewayClient } from '@svc/gateway-client'
import { graphql } from '@svc/graph'
import { SECURITY_HEADERS, sendPage, type RawHtml } from '../pages/html'
import { keptExpiry, readCardForm, scrubCardData, type CardField, type CardInput } from './card-form'
import { HOLD_TICKETS_QUERY, TICKET_PAGE_QUERY, ticketPage, ticketsSection } from './tickets'
import { checkoutFormPage, checkoutStatePage, errorPage, invalidLinkPage, withCheckoutParam, type CheckoutView } from './views'
import { SERVICE_PRINCIPALS, TICKET_PAGE_TOKEN_RE } from '@svc/vocabulary'
import type { Counter } from '../plugins/rate-limit'
import { clientNetwork } from '../plugins/client-network'

export interface CheckoutPagesOptions {
  gateway: GatewayClient
  /** card testing (docs/operations.md): every pay-form submission counted per client address, refused card forms also per checkout */
  payAttempts: { perCheckout: Counter; perAddress: Counter }
}

/** `cko_test_` / `cko_live_` + 43 base64url characters (32 random bytes). */
export const BROWSER_TOKEN_RE = /^cko_(?:test|live)_[A-Za-z0-9_-]{43}$/

export const CHECKOUT_PRINCIPAL = { kind: 'service', name: SERVICE_PRINCIPALS.checkout } as const

const CHECKOUT_QUERY = graphql(`query CheckoutPage($browserToken: String!) { checkout(browserToken: $browserToken) { ...CheckoutViewFields } }`)
const PAY_MUTATION = graphql(
  `mutation PayCheckout($browserToken: String!, $card: CardInput!) { payCheckout(browserToken: $browserToken, card: $card) { ...CheckoutViewFields } }`,
)
const LOCK_MUTATION = graphql(`mutation LockCheckout($browserToken: String!) { lockCheckout(browserToken: $browserToken) { ...CheckoutViewFields } }`)
const CANCEL_MUTATION = graphql(`mutation CancelCheckout($browserToken: String!) { cancelCheckout(browserToken: $browserToken) { ...CheckoutViewFields } }`)

/** The codes that mean "no such checkout" (unknown or malformed token): the invalid-link page, never a 500. */
const UNKNOWN_TOKEN_CODES = new Set(['NotFound', 'InvalidToken'])

/**
 * What logs may show of a URL: a checkout URL loses its token and its query (`/checkout/<token>/pay?x` →
 * `/checkout/:token/pay`), and any later segment that is not a word (`/checkout/x/<token>` → `/checkout/:token/:segment`);
 * any other URL is returned as it is.
 */
export function redactCheckoutUrl(url: string): string {
  let path = url.split(/[?#]/, 1)[0] ?? ''
  try {
    path = decodeURIComponent(path)
  } catch {
    // not decodable: judge the raw path
  }
  if (!/^\/+checkout(?:\/|$)/i.test(path)) return url
  return path.replace(/^(\/+checkout\/+)[^/]+/i, '$1:token').replace(/\/([^/]+)/g, (segment, name: string) => (name === ':token' || /^[a-z-]{1,32}$/i.test(name) ? segment : '/:segment'))
}

/**
 * The `req` log serializer of these routes, with the URL redacted. The plugin sets it on its own routes, so it is
 * safe wherever it is registered, whatever the host's logger does.
 */
export function redactedRequestSerializer(req: FastifyRequest) {
  // the same fields as the checkout host's own request serializer (server.ts), so log lines look alike
  return {
    method: req.method,
    url: redactCheckoutUrl(req.url),
    hostname: req.hostname,
    remoteAddress: req.ip,
  }
}

export const checkoutLogSerializers = { req: redactedRequestSerializer }

function isCode(err: unknown, ...codes: string[]): err is ContractError {
  return err instanceof ContractError && codes.includes(err.code)
}

type TokenParams = { Params: { token: string } }

/** What a refused card form shows again of what the buyer typed. */
type Kept = { nameOnCard: string | null; expiry: string | null }

/** A pay-form submission refused for its client address's card-testing count (the checkout stays open). */
type AddressRefusal = { view: CheckoutView; retryAfterSeconds: number }

const ADDRESS_REFUSED = 'Too many payment attempts came from your network. No payment was made; please try again later.'

export async function checkoutPagesPlugin(app: FastifyInstance, opts: CheckoutPagesOptions): Promise<void> {
  const { gateway } = opts

  // Forms only: no JSON or text bodies in this scope (an unsupported type is 415, rendered as a page).
  app.removeAllContentTypeParsers()
  await app.register(formbody, { bodyLimit: 16 * 1024 })

  app.addHook('onRequest', async (_request, reply) => {
    reply.headers({ ...SECURITY_HEADERS })
  })

  app.setErrorHandler(async (err, request, reply) => {
    const token = (request.params as { token?: string } | undefined)?.token
    const link = token && BROWSER_TOKEN_RE.test(token) ? token : null
    if (err instanceof ContractError) {
      if (UNKNOWN_TOKEN_CODES.has(err.code)) return sendPage(reply, invalidLinkPage())
      // ServiceUnavailable, ProcessorError, …: the gateway client logged what it knew
      if (err.status >= 500) {
        if (err.code === 'InternalServerError') request.log.error({ code: err.code }, 'checkout page: gateway answered an internal error')
        return sendPage(reply, errorPage(err.status, request.id, { token: link }))
      }
      request.log.error({ code: err.code, message: err.message }, 'checkout page: unexpected contract error from the gateway')
      return sendPage(reply, errorPage(500, request.id, { token: link }))
    }
    const status = (err as { statusCode?: unknown }).statusCode
    if (typeof status === 'number' && status >= 400 && status < 500) return sendPage(reply, errorPage(status, request.id, { token: link }))
    request.log.error({ err }, 'checkout page failed')
    return sendPage(reply, errorPage(500, request.id, { token: link }))
  })

  const as = (request: FastifyRequest) => ({ principal: CHECKOUT_PRINCIPAL, requestId: request.id, log: request.log })

  async function loadView(request: FastifyRequest, token: string): Promise<CheckoutView> {
    const data = await gateway.query(CHECKOUT_QUERY, { browserToken: token }, as(request))
    return data.checkout
  }

  /** A paid ticket checkout's tickets (the buyer's page); nothing for any other checkout. */
  async function paidTickets(request: FastifyRequest, view: CheckoutView): Promise<RawHtml | undefined> {
    if (view.status !== 'completed' || !view.holdId) return undefined
    const { holdTickets } = await gateway.query(HOLD_TICKETS_QUERY, { holdId: view.holdId }, as(request))
    return ticketsSection(holdTickets)
  }

  /**
   * A refused card form: the form again (400) with the message and what the buyer typed that is kept (the name and
   * the expiry; never the number or the CVC), or the checkout's state (409) if it closed meanwhile; the one that
   * passes the checkout's card-testing limit locks it instead (429).
   */
  async function refusedForm(request: FastifyRequest, reply: FastifyReply, token: string, message: string, kept: Kept, errorField?: CardField) {
    if (await pastCheckoutLimit(request, token)) return lock(request, reply, token)
    const view = await loadView(request, token)
    if (view.status !== 'pending') return sendPage(reply, checkoutStatePage(view, token, { status: 409 }))
    return sendPage(reply, checkoutFormPage(view, token, { error: message, errorField, ...kept, status: 400 }))
  }

  /**
   * CheckoutClosed: the current state, 409. A checkout still pending here is one another submission has just claimed
   * (a double-clicked Pay) and is about to charge: it is shown being processed, never the form again.
   */
  async function closed(request: FastifyRequest, reply: FastifyReply, token: string) {
    const view = await loadView(request, token)
    return sendPage(reply, checkoutStatePage(view.status === 'pending' ? { ...view, status: 'processing' } : view, token, { status: 409 }))
  }

  /**
   * Card testing: every pay-form submission counts for its client address in the checkout's environment (test cards
   * never spend a live buyer's count). Past that limit it is refused and the checkout left open: others behind a
   * shared address (a venue's wifi, a carrier's NAT) must not be able to end a buyer's checkout, who can pay later or
   * from another network. A token that names no checkout is the invalid-link page, with no count of its own: each
   * guess would otherwise leave a key kept a week.
   */
  async function refusedForAddress(request: FastifyRequest, token: string): Promise<AddressRefusal | null> {
    const environment = token.startsWith('cko_live_') ? 'live' : 'test'
    // counted for the address whether or not the checkout exists; NotFound from the read is the invalid-link page
    const [perAddress, view] = await Promise.all([opts.payAttempts.perAddress(request, `${environment}:${clientNetwork(request.ip)}`), loadView(request, token)])
    if (!perAddress?.exceeded) return null
    request.log.warn({ perAddress: true }, 'too many pay attempts: refused for the client address')
    return { view, retryAfterSeconds: perAddress.retryAfterSeconds }
  }

  /**
   * Card testing, per checkout: only a refused card form counts, since any other submission ends the checkout (charged,
   * declined, refused by the recipient) or finds it closed, so a card can be tried on it once. Counting those too let
   * a buyer's repeated clicks lock the checkout while their first payment was under way. The token is a capability,
   * so its count is kept under its hash.
   */
  async function pastCheckoutLimit(request: FastifyRequest, token: string): Promise<boolean> {
    const perCheckout = await opts.payAttempts.perCheckout(request, createHash('sha256').update(token).digest('base64url'))
    if (!perCheckout?.exceeded) return false
    request.log.warn({ perCheckout: true }, 'too many pay attempts: the checkout is locked')
    return true
  }

  /** Locks the checkout instead of showing the form again: failed as too_many_attempts, 429 (closed already: 409). */
  async function lock(request: FastifyRequest, reply: FastifyReply, token: string) {
    let locked: CheckoutView
    try {
      locked = (await gateway.query(LOCK_MUTATION, { browserToken: token }, as(request))).lockCheckout
    } catch (err) {
      if (isCode(err, 'CheckoutClosed')) return closed(request, reply, token)
      throw err
    }
    return sendPage(reply, checkoutStatePage(locked, token, { status: 429 }))
  }

  const routeOptions = { logSerializers: checkoutLogSerializers }

  /**
   * A pay or cancel form sent from another site is refused, before anything is counted or charged: a page holding a
   * buyer's checkout link could post it from the buyer's browser (card testing spread over its visitors' networks, a
   * checkout canceled). The browser says where the form came from in Sec-Fetch-Site; Origin cannot, as the pages'
   * no-referrer policy makes it `null` on their own forms. Without the header (an older browser, a script holding
   * the link) the form is taken: the token is the capability.
   */
  const fromThisSite = { preHandler: async (request: FastifyRequest<TokenParams>, reply: FastifyReply) => {
    const site = request.headers['sec-fetch-site']
    if (site === undefined || site === 'same-origin') return
    request.log.warn({ secFetchSite: site }, 'checkout form sent from another site: refused')
    const { token } = request.params
    return sendPage(reply, errorPage(403, request.id, { token: BROWSER_TOKEN_RE.test(token) ? token : null }))
  } }

  app.get<TokenParams>('/checkout/:token', routeOptions, async (request, reply) => {
    const { token } = request.params
    if (TICKET_PAGE_TOKEN_RE.test(token)) {
      const { ticketPage: ticket } = await gateway.query(TICKET_PAGE_QUERY, { pageToken: token }, as(request))
      return sendPage(reply, ticket ? await ticketPage(ticket) : invalidLinkPage())
    }
    if (!BROWSER_TOKEN_RE.test(token)) return sendPage(reply, invalidLinkPage())
    const view = await loadView(request, token)
    if (view.status === 'pending') return sendPage(reply, checkoutFormPage(view, token))
    return sendPage(reply, checkoutStatePage(view, token, { tickets: await paidTickets(request, view) }))
  })

  app.post<TokenParams>('/checkout/:token/pay', { ...routeOptions, ...fromThisSite, bodyLimit: 16 * 1024 }, async (request, reply) => {
    const { token } = request.params
    if (!BROWSER_TOKEN_RE.test(token)) return sendPage(reply, invalidLinkPage())
    const refusal = await refusedForAddress(request, token)
    if (refusal) {
      const { view } = refusal
      if (view.status !== 'pending') return sendPage(reply, checkoutStatePage(view, token, { status: 409 }))
      reply.header('Retry-After', refusal.retryAfterSeconds)
      return sendPage(reply, checkoutFormPage(view, token, { error: ADDRESS_REFUSED, status: 429 }))
    }
    const form = readCardForm(request.body)
    const kept: Kept = { nameOnCard: form.nameOnCard, expiry: keptExpiry(request.body) }
    if (!form.ok) return refusedForm(request, reply, token, form.message, kept, form.field)
    const card: CardInput = form.card
    let view: CheckoutView
    try {
      view = (await gateway.query(PAY_MUTATION, { browserToken: token, card }, as(request))).payCheckout
    } catch (err) {
      if (isCode(err, 'InvalidRequest')) return refusedForm(request, reply, token, scrubCardData(err.message, card), kept)
      if (isCode(err, 'CheckoutClosed')) return closed(request, reply, token)
      // the payment may have gone through (a charge that outlasted the gateway's wait goes on): the checkout's page
      // says what became of it, rather than a page asking the buyer to try again
      if (isCode(err, 'ServiceUnavailable')) return reply.redirect(`/checkout/${token}`, 303)
      throw err
    }
    if (view.status === 'completed') return reply.redirect(withCheckoutParam(view.returnUrl, 'completed'), 303)
    // failed (declined, …) is answered 200: the page says what happened and links back to the app
    return sendPage(reply, checkoutStatePage(view, token))
  })

  app.post<TokenParams>('/checkout/:token/cancel', { ...routeOptions, ...fromThisSite, bodyLimit: 16 * 1024 }, async (request, reply) => {
    const { token } = request.params
    if (!BROWSER_TOKEN_RE.test(token)) return sendPage(reply, invalidLinkPage())
    let view: CheckoutView
    try {
      view = (await gateway.query(CANCEL_MUTATION, { browserToken: token }, as(request))).cancelCheckout
    } catch (err) {
      if (isCode(err, 'CheckoutClosed')) return closed(request, reply, token)
      throw err
    }
    if (view.status === 'failed') {
      return reply.redirect(withCheckoutParam(view.cancelUrl, view.failureReason === 'canceled' || !view.failureReason ? 'canceled' : 'failed'), 303)
    }
    return sendPage(reply, checkoutStatePage(view, token))
  })

  // A bookmarked or reloaded action URL leads back to the page.
  for (const action of ['pay', 'cancel']) {
    app.get<TokenParams>(`/checkout/:token/${action}`, routeOptions, async (request, reply) => {
      const { token } = request.params
      if (!BROWSER_TOKEN_RE.test(token)) return sendPage(reply, invalidLinkPage())
      return reply.redirect(`/checkout/${token}`, 303)
    })
  }

  // Anything else under /checkout is an invalid link (an HTML page, and a log line without the path's token).
  app.route({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/checkout/*',
    exposeHeadRoute: false,
    ...routeOptions,
    handler: async (_request, reply) => sendPage(reply, invalidLinkPage()),
  })
  app.route({
    method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'],
    url: '/checkout',
    exposeHeadRoute: false,
    ...routeOptions,
    handler: async (_request, reply) => sendPage(reply, invalidLinkPage()),
  })
}
