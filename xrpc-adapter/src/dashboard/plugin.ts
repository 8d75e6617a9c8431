/**
 * The creator dashboard on {checkout_url}/dashboard: sign-in by a single-use link, the creator's payout
 * onboarding (test), and the approval requests apps sent them: review, accept the current terms, decline,
 * revoke, block. The only credential here is the dashboard session cookie: an Authorization header (a
 * service-auth JWT, an API key) is never read, so no identity assertion can accept an app's terms.
 */
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fastifyCookie from '@fastify/cookie'
import fastifyFormbody from '@fastify/formbody'
import { ContractError } from '@svc/errors'
import { sameSecret } from '@svc/operations'
import { csrfMatches, dashboardCookie, isDashboardPath, type DashboardSession, type DashboardSessions } from '@svc/dashboard-session'
import type { Principal } from '@svc/internal-context'
import { parseRecordUri } from '@svc/vocabulary'
import type { GatewayClient, GatewayDocument } from '@svc/gateway-client'
import { isRedisUnavailable } from '@svc/operations'
import { sendPage, setSecurityHeaders } from '../pages/html'
import {
  APPROVAL,
  APPROVAL_ACTIONS,
  COMPLETE_TEST_PAYOUT_ONBOARDING,
  HOME,
  type ApprovalAction,
} from './operations'
import * as views from './views'
import { attendeesCsv } from './attendees-csv'
import { ATTENDEES, ORGANIZER_EVENT, ORGANIZER_EVENTS, VOID_TICKET } from './ticket-operations'
import { eventPage, eventPath, eventsPage, VOID_CONFIRM_FIELD } from './ticket-views'

export interface DashboardPluginOptions {
  gateway: GatewayClient
  sessions: DashboardSessions
  /** the checkout host is https: the cookies are Secure and `__Host-` prefixed (dashboardCookie says why) */
  secureCookies: boolean
}

const APPROVAL_ID = /^apr_[A-Za-z0-9]{8,64}$/

/** Only paths of this dashboard are followed after sign-in or an action: never another origin. */
export function safeDashboardPath(value: unknown, fallback = '/dashboard'): string {
  return isDashboardPath(value) ? value : fallback
}

type IdRequest = FastifyRequest<{ Params: { id: string } }>

/** The largest form the dashboard reads (its forms carry a CSRF token and a few fields). */
const FORM_LIMIT_BYTES = 16 * 1024

export async function dashboardPlugin(app: FastifyInstance, opts: DashboardPluginOptions) {
  await app.register(fastifyCookie)
  // the session cookie, and the sign-in page's nonce, which its form posts back (SameSite=Strict: never sent with
  // another site's post; `__Host-` on https: never set by a sibling subdomain). Read only by these names
  const SESSION = dashboardCookie('session', opts.secureCookies)
  const LOGIN_NONCE = dashboardCookie('login', opts.secureCookies)
  // forms only: no JSON or text bodies in this scope (another type is refused with the error page, 400)
  app.removeAllContentTypeParsers()
  await app.register(fastifyFormbody, { bodyLimit: FORM_LIMIT_BYTES })

  // every answer of the dashboard, pages, redirects and errors alike, has the pages' security headers
  app.addHook('onRequest', async (_request, reply) => {
    setSecurityHeaders(reply)
  })

  // what a route did not answer itself (a body it cannot read, Redis away, …) is a page too, never bare JSON
  app.setErrorHandler(async (err, request, reply) => {
    if (err instanceof ContractError && err.status < 500) return sendPage(reply, views.errorPage(err))
    const status = (err as { statusCode?: unknown }).statusCode
    if (typeof status === 'number' && status >= 400 && status < 500) {
      const code = status === 413 ? 'PayloadTooLarge' : 'InvalidRequest'
      return sendPage(reply, views.errorPage(new ContractError(code, status === 413 ? 'this form is too large' : 'this form could not be read')))
    }
    if (isRedisUnavailable(err) || (err instanceof ContractError && err.code === 'ServiceUnavailable')) request.log.warn({ err }, 'dashboard: a backing service is unavailable')
    else request.log.error({ err }, 'dashboard request failed')
    return sendPage(reply, views.unavailablePage())
  })

  const sessionOf = (request: FastifyRequest) => opts.sessions.getSession(request.cookies[SESSION.name])
  const principalOf = (s: DashboardSession): Principal => ({ kind: 'dashboard', actorDid: s.actorDid, environment: s.environment, sessionId: s.sessionId })
  const ask = <T, V>(request: FastifyRequest, s: DashboardSession, operation: GatewayDocument<T, V>, variables: V) =>
    opts.gateway.query(operation, variables, { principal: principalOf(s), requestId: request.id, log: request.log })

  /** The page for a contract error; anything unexpected is logged and shown as a generic failure. */
  const failure = (request: FastifyRequest, reply: FastifyReply, err: unknown) => {
    if (err instanceof ContractError && err.status < 500) return sendPage(reply, views.errorPage(err))
    request.log.error({ err }, 'dashboard request failed')
    return sendPage(reply, views.unavailablePage())
  }

  const signedIn = async (request: FastifyRequest, reply: FastifyReply): Promise<DashboardSession | null> => {
    const s = await sessionOf(request)
    if (!s) {
      sendPage(reply, views.signInRequiredPage(request.url))
      return null
    }
    request.log = request.log.child({ sessionId: s.sessionId, actorDid: s.actorDid })
    return s
  }

  /** Form posts: a session and its CSRF token, or nothing happens. */
  const signedInForm = async (request: FastifyRequest, reply: FastifyReply): Promise<{ s: DashboardSession; form: Record<string, unknown> } | null> => {
    const s = await signedIn(request, reply)
    if (!s) return null
    const form = (request.body ?? {}) as Record<string, unknown>
    if (!csrfMatches(s, form.csrf)) {
      sendPage(reply, views.errorPage(new ContractError('NotAllowed', 'this form has expired; reload the page and try again')))
      return null
    }
    return { s, form }
  }

  // A sign-in link opens a page that asks; its button's POST spends the link (views.signInConfirmPage says why). The
  // POST must carry the nonce of the cookie set with the page: SameSite=Strict, so a post from another site has none,
  // and `__Host-` on https, so a sibling subdomain (same-site) cannot set one of its own with Domain=.parent.
  app.get('/dashboard/login/:token', async (request: FastifyRequest<{ Params: { token: string }; Querystring: { next?: string } }>, reply) => {
    const who = await opts.sessions.peekLoginLink(request.params.token)
    if (!who) return sendPage(reply, views.signInLinkInvalidPage())
    const nonce = randomBytes(18).toString('base64url')
    reply.setCookie(LOGIN_NONCE.name, nonce, LOGIN_NONCE.options)
    return sendPage(reply, views.signInConfirmPage(request.params.token, who, safeDashboardPath(request.query.next), nonce))
  })

  app.post('/dashboard/login/:token', async (request: FastifyRequest<{ Params: { token: string }; Body: { next?: unknown; nonce?: unknown } }>, reply) => {
    const form = (request.body ?? {}) as { next?: unknown; nonce?: unknown }
    const cookieNonce = request.cookies[LOGIN_NONCE.name]
    if (typeof form.nonce !== 'string' || !cookieNonce || !sameSecret(form.nonce, cookieNonce)) {
      return sendPage(reply, views.errorPage(new ContractError('NotAllowed', 'this sign-in form has expired or was not opened here; open the sign-in link again')))
    }
    reply.clearCookie(LOGIN_NONCE.name, LOGIN_NONCE.options)
    const started = await opts.sessions.redeemLoginLink(request.params.token)
    if (!started) return sendPage(reply, views.signInLinkInvalidPage())
    // the session this browser had ends: its cookie, left in a shared browser or copied from it, opens nothing more.
    // The link is spent and the new session made by now: a failure here is logged, and the sign-in goes on (the
    // cookie below replaces the old one in this browser; the old session lapses on its own)
    await opts.sessions.destroySession(request.cookies[SESSION.name]).catch((err: unknown) => request.log.warn({ err }, 'the earlier dashboard session could not be ended'))
    reply.setCookie(SESSION.name, started.cookie, SESSION.options)
    request.log.info({ sessionId: started.session.sessionId, actorDid: started.session.actorDid }, 'dashboard session started')
    return reply.redirect(safeDashboardPath(typeof form.next === 'string' ? form.next : undefined), 303)
  })

  // a form of the session's own pages (its CSRF token), so another site cannot sign the creator out
  app.post('/dashboard/logout', async (request, reply) => {
    const signed = await signedInForm(request, reply)
    if (!signed) return reply
    await opts.sessions.destroySession(request.cookies[SESSION.name])
    reply.clearCookie(SESSION.name, SESSION.options)
    return sendPage(reply, views.signedOutPage())
  })

  app.get('/dashboard', async (request, reply) => {
    const s = await signedIn(request, reply)
    if (!s) return reply
    try {
      const data = await ask(request, s, HOME, {})
      return sendPage(reply, views.homePage(s, data))
    } catch (err) {
      return failure(request, reply, err)
    }
  })

  const approvalPage = (mode: 'review' | 'onboarding') => async (request: IdRequest, reply: FastifyReply) => {
    const s = await signedIn(request, reply)
    if (!s) return reply
    if (!APPROVAL_ID.test(request.params.id)) return sendPage(reply, views.errorPage(new ContractError('NotFound', 'no such approval request')))
    try {
      const data = await ask(request, s, APPROVAL, { id: request.params.id })
      return sendPage(reply, views.approvalPage(s, data, mode))
    } catch (err) {
      return failure(request, reply, err)
    }
  }
  app.get('/dashboard/approvals/:id', approvalPage('review'))
  app.get('/dashboard/onboarding/:id', approvalPage('onboarding'))

  app.post('/dashboard/approvals/:id/:action', async (request: FastifyRequest<{ Params: { id: string; action: string } }>, reply) => {
    const signed = await signedInForm(request, reply)
    if (!signed) return reply
    const { s, form } = signed
    const { id, action } = request.params
    if (!APPROVAL_ID.test(id) || !Object.hasOwn(APPROVAL_ACTIONS, action)) {
      return sendPage(reply, views.errorPage(new ContractError('NotFound', 'no such approval action')))
    }
    const variables = action === 'accept' ? { id, termsHash: typeof form.termsHash === 'string' ? form.termsHash : '' } : { id }
    try {
      const data = (await ask(request, s, APPROVAL_ACTIONS[action as ApprovalAction] as GatewayDocument<unknown, typeof variables>, variables)) as Record<
        string,
        { setupReturnUrl: string | null; appOrigin: string; status: string }
      >
      const approval = Object.values(data)[0]!
      request.log.info({ approvalId: id, action, status: approval.status }, 'approval decision')
      // After accepting from the onboarding flow the creator goes back to the app: its setupReturnUrl, or its
      // registered origin when it gave none (or the origin has changed since)
      const back = action === 'accept' && form.from === 'onboarding' ? views.returnWithStatus({ ...approval, id }) : null
      if (back) return reply.redirect(back, 303)
      return reply.redirect(`/dashboard/${form.from === 'onboarding' ? 'onboarding' : 'approvals'}/${id}`, 303)
    } catch (err) {
      return failure(request, reply, err)
    }
  })

  // ---- the organizer's events (docs/tickets.md, "The organizer's dashboard") ----
  const TICKET_ID = /^ticket_[0-9a-f]{24}$/
  const eventUriOf = (request: FastifyRequest): string | null => {
    const uri = (request.query as { uri?: unknown }).uri
    // a record's AT-URI, as every configured event is (anything else, a NUL character say, names no event)
    return typeof uri === 'string' && uri.length <= 2048 && parseRecordUri(uri) ? uri : null
  }

  app.get('/dashboard/events', async (request, reply) => {
    const s = await signedIn(request, reply)
    if (!s) return reply
    try {
      return sendPage(reply, eventsPage(s, await ask(request, s, ORGANIZER_EVENTS, {})))
    } catch (err) {
      return failure(request, reply, err)
    }
  })

  app.get('/dashboard/events/view', async (request, reply) => {
    const s = await signedIn(request, reply)
    if (!s) return reply
    const eventUri = eventUriOf(request)
    if (!eventUri) return sendPage(reply, views.errorPage(new ContractError('NotFound', 'no such event')))
    // the page of tickets after this cursor (a bad one is the tickets domain's InvalidRequest)
    const after = (request.query as { after?: unknown }).after
    const cursor = typeof after === 'string' && after !== '' ? after.slice(0, 200) : null
    try {
      if (Array.isArray(after)) throw new ContractError('InvalidRequest', 'after must be one nextCursor of an earlier page, given once')
      return sendPage(reply, eventPage(s, await ask(request, s, ORGANIZER_EVENT, { eventUri, after: cursor }), cursor))
    } catch (err) {
      return failure(request, reply, err)
    }
  })

  app.get('/dashboard/events/attendees.csv', async (request, reply) => {
    const s = await signedIn(request, reply)
    if (!s) return reply
    const eventUri = eventUriOf(request)
    if (!eventUri) return sendPage(reply, views.errorPage(new ContractError('NotFound', 'no such event')))
    try {
      const page = async (after: string | null) => (await ask(request, s, ATTENDEES, { eventUri, after })).organizerEvent.ticketPage
      const rows = Readable.from(attendeesCsv(await page(null), page))
      // a page that fails after the answer started ends it cut off: said in the log, as the browser shows a failed download
      rows.on('error', (err) => request.log.error({ err }, 'the attendee list was cut off'))
      return reply
        .header('content-type', 'text/csv; charset=utf-8')
        .header('content-disposition', 'attachment; filename="attendees.csv"')
        .header('cache-control', 'no-store')
        .send(rows)
    } catch (err) {
      return failure(request, reply, err)
    }
  })

  app.post('/dashboard/tickets/:id/void', async (request: IdRequest, reply) => {
    const signed = await signedInForm(request, reply)
    if (!signed) return reply
    if (!TICKET_ID.test(request.params.id)) return sendPage(reply, views.errorPage(new ContractError('NotFound', 'no such ticket')))
    // voiding cannot be undone: the form's required "I understand" box must be ticked (ticket-views.ts)
    if (signed.form[VOID_CONFIRM_FIELD] !== 'yes') {
      return sendPage(reply, views.errorPage(new ContractError('InvalidRequest', 'the ticket was not voided: tick "I understand" next to its Void button to confirm, as voiding cannot be undone')))
    }
    try {
      const { voidTicket } = await ask(request, signed.s, VOID_TICKET, { ticketId: request.params.id })
      request.log.info({ ticketId: voidTicket.id }, 'ticket voided')
      return reply.redirect(eventPath(voidTicket.eventUri), 303)
    } catch (err) {
      return failure(request, reply, err)
    }
  })

  app.post('/dashboard/payouts/onboard', async (request, reply) => {
    const signed = await signedInForm(request, reply)
    if (!signed) return reply
    try {
      await ask(request, signed.s, COMPLETE_TEST_PAYOUT_ONBOARDING, {})
      request.log.info('test payout onboarding completed')
      return reply.redirect(safeDashboardPath(signed.form.next), 303)
    } catch (err) {
      return failure(request, reply, err)
    }
  })

  // anything else under /dashboard is the not-found page
  const notFound = async (_request: FastifyRequest, reply: FastifyReply) => sendPage(reply, views.errorPage(new ContractError('NotFound', 'there is no such page')))
  app.route({ method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'], url: '/dashboard/*', exposeHeadRoute: false, handler: notFound })
  app.route({ method: ['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'], url: '/dashboard', handler: notFound })
}
