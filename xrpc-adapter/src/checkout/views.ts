/**
 * The hosted checkout's pages (server-rendered, no JavaScript): the payment form of a pending checkout, the page of
 * every other state, the invalid-link page and the error pages. Every value from the payments subgraph is escaped
 * by the `html` template; app URLs pass `safeUrl`.
 */
import { graphql, type ResultOf } from '@svc/graph'
import { html, page, raw, safeUrl, type HtmlResponse, type RawHtml } from '../pages/html'
import { CARD_FIELDS, EXPIRY_MAX_LENGTH, type CardField } from './card-form'
import { formatMoney } from './money'

/** What the checkout pages read of one checkout: the payments subgraph's `CheckoutView`, as its SDL declares it. */
export const CHECKOUT_VIEW_FIELDS = graphql(`fragment CheckoutViewFields on CheckoutView {
  id environment status failureReason failureMessage recipientDid recipientName paymentType holdId description currency
  amount serviceFee buyerFee total returnUrl cancelUrl expiresAt
}`)
export type CheckoutView = ResultOf<typeof CHECKOUT_VIEW_FIELDS>

/** The query parameter added to the app's return and cancel URLs. */
export const RETURN_PARAM = 'svc_checkout'

/** `url` with `svc_checkout=<value>` added; the app's own query is kept byte for byte. */
export function withCheckoutParam(url: string, value: 'completed' | 'canceled' | 'failed'): string {
  const safe = safeUrl(url, '')
  if (!safe) return '#'
  const u = new URL(safe)
  if (u.searchParams.has(RETURN_PARAM)) {
    u.searchParams.set(RETURN_PARAM, value)
  } else {
    u.search = u.search && u.search !== '?' ? `${u.search}&${RETURN_PARAM}=${value}` : `?${RETURN_PARAM}=${value}`
  }
  return u.href
}

const TYPE_LABELS: Record<string, string> = { tip: 'Tip', shop: 'Purchase', subscription: 'Subscription', ticket: 'Ticket' }

function hostOf(url: string): string {
  try {
    return new URL(url).host
  } catch {
    return 'the app'
  }
}

function expiryText(expiresAt: string): string | null {
  const d = new Date(expiresAt)
  if (Number.isNaN(d.getTime())) return null
  return new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(d) + ' UTC'
}

const isTest = (view: CheckoutView) => view.environment !== 'live'

function testBanner(view: CheckoutView): RawHtml | null {
  return isTest(view) ? html`TEST MODE · no real payment is made` : null
}

function money(view: CheckoutView, amount: number): string {
  return formatMoney(amount, view.currency)
}

/** Recipient, description and the amount lines (amount, service fee when the buyer pays one, total). */
function summary(view: CheckoutView, opts: { main: boolean }): RawHtml {
  const recipient = view.recipientName || view.recipientDid
  return html`<p class="eyebrow">${TYPE_LABELS[view.paymentType] ?? 'Payment'}</p>
${opts.main ? html`<h1 id="recipient">${recipient}</h1>` : html`<h2 id="recipient">${recipient}</h2>`}
<p class="muted small">Paying <code id="recipient-did">${view.recipientDid}</code></p>
<p id="description">${view.description}</p>
<dl class="summary">
<div><dt>Amount</dt><dd id="amount">${money(view, view.amount)}</dd></div>
${view.buyerFee > 0 ? html`<div><dt>Service fee</dt><dd id="buyer-fee">${money(view, view.buyerFee)}</dd></div>` : ''}
<div class="total"><dt>Total</dt><dd id="total">${money(view, view.total)}</dd></div>
</dl>`
}

export interface FormPageOptions {
  /** shown above the form (a refused card form) */
  error?: string | null
  /** the field the error is about: marked invalid, described by the error, the cursor put in it (else the card number) */
  errorField?: CardField
  /** put back into the name field after a refused form; the card number and CVC never are */
  nameOnCard?: string | null
  /** put back into the expiry field after a refused form, as the buyer typed it (not sensitive, unlike the number) */
  expiry?: string | null
  status?: number
}

/** The payment form of a pending checkout. */
export function checkoutFormPage(view: CheckoutView, token: string, opts: FormPageOptions = {}): HtmlResponse {
  const total = money(view, view.total)
  const expires = expiryText(view.expiresAt)
  // a refused form: the error is tied to its field and the cursor starts there (no script: the page is new)
  const at = opts.error ? (opts.errorField ?? 'number') : null
  const state = (field: CardField) =>
    at !== field ? raw('') : opts.errorField ? raw(' aria-invalid="true" aria-describedby="form-error" autofocus') : raw(' aria-describedby="form-error" autofocus')
  const body = html`<main class="card">
${summary(view, { main: true })}
${opts.error ? html`<p class="alert error" role="alert" id="form-error">${opts.error}</p>` : ''}
${isTest(view)
  ? html`<div class="alert info small" id="test-cards"><strong>Test mode.</strong> Pay with <code class="nowrap">4242 4242 4242 4242</code> (succeeds) or <code class="nowrap">4000 0000 0000 0002</code> (declined), any future expiry date and any 3-digit CVC.</div>`
  : ''}
<form method="post" action="/checkout/${token}/pay" id="pay-form">
<div class="field"><label for="${CARD_FIELDS.number}">Card number</label><input type="text" id="${CARD_FIELDS.number}" name="${CARD_FIELDS.number}" inputmode="numeric" autocomplete="cc-number"${state('number')} placeholder="1234 1234 1234 1234" maxlength="23" required></div>
<div class="row">
<div class="field"><label for="${CARD_FIELDS.expiry}">Expiry (MM/YY)</label><input type="text" id="${CARD_FIELDS.expiry}" name="${CARD_FIELDS.expiry}" inputmode="numeric" autocomplete="cc-exp"${state('expiry')} placeholder="MM/YY" maxlength="${EXPIRY_MAX_LENGTH}" value="${opts.expiry ?? ''}" required></div>
<div class="field"><label for="${CARD_FIELDS.cvc}">CVC</label><input type="text" id="${CARD_FIELDS.cvc}" name="${CARD_FIELDS.cvc}" inputmode="numeric" autocomplete="cc-csc"${state('cvc')} placeholder="123" maxlength="4" required></div>
</div>
<div class="field"><label for="${CARD_FIELDS.name}">Name on card (optional)</label><input type="text" id="${CARD_FIELDS.name}" name="${CARD_FIELDS.name}" autocomplete="cc-name" maxlength="100" value="${opts.nameOnCard ?? ''}"></div>
<button type="submit" class="btn" id="pay">Pay ${total}</button>
</form>
<form method="post" action="/checkout/${token}/cancel" class="center mt">
<button type="submit" class="btn-link small" id="cancel">Cancel and return to ${hostOf(view.cancelUrl)}</button>
</form>
${expires ? html`<p class="muted small center">This checkout link expires ${expires}.</p>` : ''}
</main>`
  return page({ title: opts.error ? `Error: ${opts.error} – Pay ${total}` : `Pay ${total}`, body, banner: testBanner(view), status: opts.status ?? 200 })
}

function failedContent(view: CheckoutView): { title: string; heading: string; message: RawHtml; param: 'canceled' | 'failed' } {
  switch (view.failureReason) {
    case 'declined':
      return {
        title: 'Payment declined',
        heading: 'Payment not completed',
        message: html`<p class="alert error" role="alert" id="status-message"><strong>Payment declined:</strong> ${view.failureMessage || 'Your card was declined.'}</p>`,
        param: 'failed',
      }
    case 'expired':
      return {
        title: 'Checkout expired',
        heading: 'This checkout has expired',
        message: html`<p class="alert error" id="status-message">The time to pay has run out. No payment was made.</p>`,
        param: 'failed',
      }
    case 'canceled':
      return {
        title: 'Checkout canceled',
        heading: 'Checkout canceled',
        message: html`<p class="alert info" id="status-message">This checkout was canceled. No payment was made.</p>`,
        param: 'canceled',
      }
    default:
      return {
        title: 'Payment failed',
        heading: 'Payment failed',
        message: html`<p class="alert error" role="alert" id="status-message"><strong>Payment failed:</strong> ${view.failureMessage || 'The payment could not be completed.'}</p>`,
        param: 'failed',
      }
  }
}

/** Whether `url` is the page of the checkout with browser token `token` (a hold's checkout given no URL of the app's). */
function isThisPage(url: string, token: string): boolean {
  return URL.canParse(url) && new URL(url).pathname === `/checkout/${token}`
}

/** The page of a checkout that is not (or no longer) pending: completed, failed (with its reason), processing. */
export function checkoutStatePage(view: CheckoutView, token: string, opts: { status?: number; tickets?: RawHtml } = {}): HtmlResponse {
  const status = opts.status ?? 200
  const banner = testBanner(view)
  if (view.status === 'completed') {
    const url = withCheckoutParam(view.returnUrl, 'completed')
    const body = html`<main class="card">
<h1 id="status-heading">Payment complete</h1>
<p class="alert ok" id="status-message">You paid ${money(view, view.total)} to ${view.recipientName || view.recipientDid}.</p>
${summary(view, { main: false })}
${opts.tickets ?? ''}
<a class="btn" id="return" href="${url}">Return to ${hostOf(view.returnUrl)}</a>
</main>`
    return page({ title: 'Payment complete', body, banner, status })
  }
  if (view.status === 'failed') {
    const f = failedContent(view)
    // a hold's checkout without a cancelUrl comes back to this page, which cannot be paid again: the buyer starts over
    // where the checkout was started
    const back = isThisPage(view.cancelUrl, token)
      ? html`<p id="return">To try again, go back to where you started this purchase.</p>`
      : html`<a class="btn" id="return" href="${withCheckoutParam(view.cancelUrl, f.param)}">Return to ${hostOf(view.cancelUrl)}${f.param === 'failed' ? ' to try again' : ''}</a>`
    const body = html`<main class="card">
<h1 id="status-heading">${f.heading}</h1>
${f.message}
${summary(view, { main: false })}
${back}
</main>`
    return page({ title: f.title, body, banner, status })
  }
  if (view.status === 'processing') {
    const body = html`<main class="card">
<h1 id="status-heading">Your payment is being processed</h1>
<p class="alert info" id="status-message">This usually takes a moment. Please do not pay again.</p>
${summary(view, { main: false })}
<a class="btn" id="refresh" href="/checkout/${token}">Check again</a>
</main>`
    return page({ title: 'Payment being processed', body, banner, status })
  }
  // pending (or a state this page does not know yet): the form
  return checkoutFormPage(view, token, { status })
}

/** Unknown, malformed or foreign checkout links. Never repeats the link. */
export function invalidLinkPage(): HtmlResponse {
  const body = html`<main class="card">
<h1 id="status-heading">This checkout link is not valid</h1>
<p>Check that you opened the whole link, or return to the app and start the payment again.</p>
</main>`
  return page({ title: 'Checkout link not valid', body, status: 404 })
}

const ERROR_TEXTS: Record<number, { title: string; text: string }> = {
  400: { title: 'The form could not be read', text: 'Please go back and submit the payment form again.' },
  403: { title: 'The form came from another site', text: 'Nothing was paid or canceled. Open your checkout link and use the form on its page.' },
  413: { title: 'The form is too large', text: 'Please go back and submit the payment form again.' },
  415: { title: 'The form could not be read', text: 'Please go back and submit the payment form again.' },
  502: { title: 'The payment processor did not answer', text: 'Your payment may not have gone through. Open the checkout link again to see its state before you retry.' },
  503: { title: 'Checkout is temporarily unavailable', text: 'Please try again in a moment.' },
}

/** Any other failure: a plain page with the request id, so support can find the logs. */
export function errorPage(status: number, requestId: string, opts: { token?: string | null } = {}): HtmlResponse {
  const known = ERROR_TEXTS[status] ?? (status >= 500 ? { title: 'Something went wrong', text: 'Please try again in a moment.' } : ERROR_TEXTS[400]!)
  const body = html`<main class="card">
<h1 id="status-heading">${known.title}</h1>
<p>${known.text}</p>
${opts.token ? html`<p><a href="/checkout/${opts.token}">Back to the checkout</a></p>` : ''}
<p class="muted small">Reference: <code>${requestId}</code></p>
</main>`
  return page({ title: known.title, body, status })
}
