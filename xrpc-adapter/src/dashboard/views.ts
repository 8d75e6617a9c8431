/** The dashboard's pages: plain server-rendered HTML forms, no JavaScript. */
import type { ContractError } from '@svc/errors'
import { isDashboardPath, type DashboardSession } from '@svc/dashboard-session'
import { html, type Html } from '../pages/html'
import type { ApprovalData, ApprovalDetail, DashboardActor, HomeData } from './operations'

export interface View {
  status: number
  title: string
  body: Html
}

const PAYOUT_TEXT: Record<string, string> = {
  ready: 'Ready: you can receive payments.',
  'onboarding-required': 'Not set up: complete payout onboarding to receive payments.',
  'pending-verification': 'Being verified by the payment processor.',
  restricted: 'Restricted by the payment processor: payouts are paused.',
}

const STATUS_TEXT: Record<string, string> = {
  pending: 'Waiting for your decision',
  approved: 'Approved',
  declined: 'Declined',
  revoked: 'Revoked',
  blocked: 'Blocked',
}

const percent = (bps: number) => `${(bps / 100).toFixed(2).replace(/\.?0+$/, '')}%`

/**
 * Where onboarding sends the creator back to after accepting: the request's setupReturnUrl while it is on the app's
 * registered origin (it was checked against it when asked; an operator may have moved the app since), else that origin.
 */
export function returnTarget(a: { setupReturnUrl?: string | null; appOrigin: string }): string | null {
  const origin = (url: string) => {
    try {
      const u = new URL(url)
      return u.protocol === 'https:' || u.protocol === 'http:' ? u.origin : null
    } catch {
      return null
    }
  }
  const appOrigin = origin(a.appOrigin)
  if (a.setupReturnUrl && appOrigin !== null && origin(a.setupReturnUrl) === appOrigin) return a.setupReturnUrl
  return appOrigin === null ? null : `${appOrigin}/`
}

/** Where the onboarding flow sends the creator back to, saying what became of the request (null: nowhere known). */
export function returnWithStatus(a: { id: string; status: string; setupReturnUrl?: string | null; appOrigin: string }): string | null {
  const target = returnTarget(a)
  if (!target) return null
  const back = new URL(target)
  back.searchParams.set('svc_approval', a.status)
  back.searchParams.set('approval_id', a.id)
  return back.toString()
}

export function csrfField(s: DashboardSession): Html {
  return html`<input type="hidden" name="csrf" value="${s.csrfToken}">`
}

export function header(s: DashboardSession): Html {
  return html`<header class="bar"><nav aria-label="Dashboard"><a href="/dashboard">Dashboard</a> <a href="/dashboard/events" id="nav-events">Your events</a></nav>
    <span class="who">${s.actorDid} · ${s.environment === 'test' ? 'TEST MODE' : 'live'}</span>
    <form method="post" action="/dashboard/logout" class="inline">${csrfField(s)}<button type="submit" class="link">Sign out</button></form></header>`
}

function payoutSection(s: DashboardSession, actor: DashboardActor | null, next: string): Html {
  if (!actor) return html`<section><h2>Payouts</h2><p>No payout account is known for you in ${s.environment}.</p></section>`
  const canOnboard = !actor.payable && s.environment === 'test'
  return html`<section id="payouts"><h2>Payouts</h2>
    <p>Status: <strong id="payout-status">${actor.payoutStatus}</strong>. ${PAYOUT_TEXT[actor.payoutStatus] ?? ''}</p>
    ${canOnboard
      ? html`<form method="post" action="/dashboard/payouts/onboard">${csrfField(s)}<input type="hidden" name="next" value="${next}">
          <button type="submit" id="complete-payout-onboarding" class="primary">Complete payout onboarding (test)</button>
          <p class="hint">In test mode this stands in for the processor's onboarding: your payout account becomes ready.</p></form>`
      : ''}
  </section>`
}

export function homePage(s: DashboardSession, data: HomeData): View {
  const rows = data.dashboardApprovals.map(
    (a) => html`<tr><td>${a.app.name ?? a.appDid}<br><small>${a.appOrigin}</small></td><td>${a.paymentTypes.join(', ')}</td>
      <td>${percent(a.appliedFeeShareBps)}</td><td>${STATUS_TEXT[a.status] ?? a.status}</td><td><a href="/dashboard/approvals/${a.id}">Review</a></td></tr>`,
  )
  return {
    status: 200,
    title: 'Dashboard',
    body: html`${header(s)}<main><h1>Your dashboard</h1>
      ${payoutSection(s, data.dashboardActor, '/dashboard')}
      <section><h2>App requests</h2>
      ${rows.length
        ? html`<table><thead><tr><th>App</th><th>Payment types</th><th>App fee share</th><th>Status</th><th><span class="visually-hidden">Actions</span></th></tr></thead><tbody>${rows}</tbody></table>`
        : html`<p>No app has asked for your approval yet.</p>`}
      </section></main>`,
  }
}

function terms(a: ApprovalDetail): Html {
  return html`<dl class="terms">
    <dt>App</dt><dd>${a.app.name ?? a.appDid}<br><small>${a.appDid}</small></dd>
    <dt>App website</dt><dd>${a.appOrigin}</dd>
    <dt>Payment types</dt><dd id="terms-payment-types">${a.paymentTypes.join(', ')}</dd>
    <dt>App fee share</dt><dd id="terms-fee-share">${percent(a.appliedFeeShareBps)} of each payment${
      a.appliedFeeShareBps < a.feeShareBps ? ` (the app asked for ${percent(a.feeShareBps)}; the platform has lowered its share since)` : ''
    }</dd>
    <dt>Public records</dt><dd>${a.publicRecords.enabled ? `published (attestations ${a.publicRecords.defaults.attestation ?? 'public'})` : 'not published'}</dd>
    ${a.requestReason ? html`<dt>Why</dt><dd>${a.requestReason}</dd>` : ''}
  </dl>`
}

function action(s: DashboardSession, a: ApprovalDetail, name: string, label: string, from: string, extra: Html | string = ''): Html {
  return html`<form method="post" action="/dashboard/approvals/${a.id}/${name}" class="inline">${csrfField(s)}
    <input type="hidden" name="from" value="${from}">${extra}<button type="submit" id="${name}" class="${name === 'accept' ? 'primary' : 'secondary'}">${label}</button></form>`
}

/**
 * The onboarding flow's way back to the app: after an accept the creator is sent there; a request that needs no
 * accept (approved earlier, the app sending the creator to finish payout setup) links there.
 */
function returnSection(a: ApprovalDetail, acceptable: boolean): Html {
  const back = returnWithStatus(a)!
  const origin = new URL(back).origin
  return acceptable
    ? html`<p class="hint">After you accept you return to ${origin}.</p>`
    : html`<p><a id="return-to-app" href="${back}">Return to ${a.app.name ?? origin}</a></p>`
}

export function approvalPage(s: DashboardSession, data: ApprovalData, mode: 'review' | 'onboarding'): View {
  const a = data.dashboardApproval
  const back = returnTarget(a)
  const acceptable = a.status === 'pending' || a.status === 'declined'
  const actions: Html[] = []
  if (acceptable) {
    actions.push(action(s, a, 'accept', 'Accept these terms', mode, html`<input type="hidden" name="termsHash" value="${a.termsHash}">`))
  }
  if (a.status === 'pending') actions.push(action(s, a, 'decline', 'Decline', mode))
  if (a.status === 'approved') actions.push(action(s, a, 'revoke', 'Revoke approval', mode))
  if (a.status === 'blocked') actions.push(action(s, a, 'unblock', 'Unblock this app', mode))
  else actions.push(action(s, a, 'block', 'Block this app', mode))
  const here = `/dashboard/${mode === 'onboarding' ? 'onboarding' : 'approvals'}/${a.id}`
  return {
    status: 200,
    title: `Approve ${a.app.name ?? 'an app'}`,
    body: html`${header(s)}<main>
      <h1>${a.app.name ?? 'An app'} asks to take payments for you</h1>
      <p>Status: <strong id="approval-status">${STATUS_TEXT[a.status] ?? a.status}</strong>${a.approvedAt ? html` since ${a.approvedAt}` : ''}</p>
      ${mode === 'onboarding' ? payoutSection(s, data.dashboardActor, here) : ''}
      <section><h2>Terms</h2>${terms(a)}
        ${acceptable ? html`<p>Accepting lets this app start checkouts that pay you, on exactly these terms. If the app changes them, it must ask again.</p>` : ''}
        <div class="actions">${actions}</div>
      </section>
      ${mode === 'onboarding' && back ? returnSection(a, acceptable) : ''}
    </main>`,
  }
}

export function signInRequiredPage(url: string): View {
  // the command is copied into a shell: it names the page only as a dashboard path (letters, digits, _ / -), never
  // the request's query, which anyone linking here chooses
  const path = url.split('?')[0]
  const next = isDashboardPath(path) ? ` --next ${path}` : ''
  return {
    status: 401,
    title: 'Sign in',
    body: html`<main><h1>Sign in to your dashboard</h1>
      <p>This page needs a dashboard session. Open the sign-in link you were given; it brings you back here.</p>
      <p class="hint">Local development: <code>npm run operator:actors -- dashboard-link --did &lt;your DID&gt; --env test${next}</code></p></main>`,
  }
}

/**
 * What a sign-in link opens: whom it signs in, and a button. Only the button's POST spends the link and starts the
 * session, so a mail scanner that fetches the link spends nothing, and another site cannot sign the creator in to
 * someone else's session (the form carries a nonce of a SameSite=Strict cookie set with this page, `__Host-` on https).
 */
export function signInConfirmPage(token: string, who: { actorDid: string; environment: string }, next: string, nonce: string): View {
  return {
    status: 200,
    title: 'Sign in',
    body: html`<main><h1>Sign in to your dashboard</h1>
      <p>You are signing in as <code id="actor">${who.actorDid}</code> (${who.environment}).</p>
      <form method="post" action="/dashboard/login/${token}">
        <input type="hidden" name="next" value="${next}">
        <input type="hidden" name="nonce" value="${nonce}">
        <button type="submit" id="sign-in">Sign in</button>
      </form></main>`,
  }
}

export function signInLinkInvalidPage(): View {
  return {
    status: 401,
    title: 'Sign-in link not valid',
    body: html`<main><h1>This sign-in link is not valid</h1><p>It was already used, it expired, or it was mistyped. Ask for a new one.</p></main>`,
  }
}

export function signedOutPage(): View {
  return { status: 200, title: 'Signed out', body: html`<main><h1>You are signed out</h1></main>` }
}

export function errorPage(err: ContractError): View {
  const title =
    err.code === 'NotFound'
      ? 'Not found'
      : err.code === 'ApprovalTermsChanged'
        ? 'The terms changed'
        : err.status === 403
          ? 'Not allowed'
          : 'Something is not right'
  return { status: err.status, title, body: html`<main><h1>${title}</h1><p id="error-message">${err.message}</p><p><a href="/dashboard">Back to the dashboard</a></p></main>` }
}

export function unavailablePage(): View {
  return { status: 503, title: 'Unavailable', body: html`<main><h1>The dashboard is unavailable</h1><p>Try again in a moment.</p></main>` }
}
