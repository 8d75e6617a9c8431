/**
 * The pages toolkit: the escaping `html` template, `raw`, `safeUrl`, the layout and the security headers; and the
 * accessibility of the hosted pages built on it (the dashboard's nav landmark, the card form's optional name and kept
 * expiry, the Void confirmation, the event page's title).
 */
import Fastify from 'fastify'
import { dashboardCookie, type DashboardSession, type DashboardSessions } from '@svc/dashboard-session'
import type { GatewayClient } from '@svc/gateway-client'
import { keptExpiry } from '../src/checkout/card-form'
import { checkoutFormPage, type CheckoutView } from '../src/checkout/views'
import { dashboardPlugin } from '../src/dashboard/plugin'
import type { OrganizerEventData } from '../src/dashboard/ticket-operations'
import { eventPage } from '../src/dashboard/ticket-views'
import { header } from '../src/dashboard/views'
import { escapeHtml, html, HTML_CONTENT_TYPE, isRawHtml, page, raw, safeUrl, SECURITY_HEADERS, sendPage } from '../src/pages/html'

describe('escapeHtml', () => {
  it('escapes the five HTML-significant characters and nothing else', () => {
    expect(escapeHtml(`<a href="x" title='y'>&amp;</a>`)).toBe('&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;amp;&lt;/a&gt;')
    expect(escapeHtml('plain text, é, 日本, 💳 / = `')).toBe('plain text, é, 日本, 💳 / = `')
    expect(escapeHtml('')).toBe('')
  })
})

describe('html', () => {
  it('escapes every interpolated value', () => {
    const hostile = `<script>alert("x")</script>' onmouseover='x`
    const out = html`<p title="${hostile}">${hostile}</p>`
    expect(out.html).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onmouseover=&#39;x">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39; onmouseover=&#39;x</p>',
    )
    expect(out.html).not.toContain('<script>')
  })

  it('inserts raw() and nested html as they are, without escaping twice', () => {
    const inner = html`<b>${'a & b'}</b>`
    expect(html`<p>${inner}</p>`.html).toBe('<p><b>a &amp; b</b></p>')
    expect(html`<p>${raw('<i>trusted</i>')}</p>`.html).toBe('<p><i>trusted</i></p>')
    expect(html`${html`${html`${'<'}`}`}`.html).toBe('&lt;')
  })

  it('joins arrays, each item by the same rule', () => {
    const items = ['<one>', 'two & three']
    expect(html`<ul>${items.map((i) => html`<li>${i}</li>`)}</ul>`.html).toBe('<ul><li>&lt;one&gt;</li><li>two &amp; three</li></ul>')
    expect(html`${['<a>', raw('<b>'), ['<c>', raw('<d>')]]}`.html).toBe('&lt;a&gt;<b>&lt;c&gt;<d>')
    expect(html`${[]}`.html).toBe('')
  })

  it('renders nothing for null, undefined and false; numbers and true as text', () => {
    const no = false as boolean
    expect(html`[${null}|${undefined}|${no && html`<x>`}|${0}|${12.5}|${true}]`.html).toBe('[|||0|12.5|true]')
  })

  it('returns a marker object: html results and raw() are RawHtml, strings are not', () => {
    expect(isRawHtml(html`x`)).toBe(true)
    expect(isRawHtml(raw('x'))).toBe(true)
    expect(isRawHtml('x')).toBe(false)
    expect(isRawHtml({ html: '<x>' })).toBe(false)
    expect(String(html`<b>${'&'}</b>`)).toBe('<b>&amp;</b>')
    // a look-alike object from outside is escaped, not trusted
    expect(html`${{ html: '<x>', toString: () => '<x>' }}`.html).toBe('&lt;x&gt;')
  })
})

describe('safeUrl', () => {
  it('keeps absolute http(s) URLs and replaces anything else', () => {
    expect(safeUrl('https://app.example.com/thanks?a=1&b=2')).toBe('https://app.example.com/thanks?a=1&b=2')
    expect(safeUrl('http://127.0.0.1:8080/x')).toBe('http://127.0.0.1:8080/x')
    expect(safeUrl('javascript:alert(1)')).toBe('#')
    expect(safeUrl(' JavaScript:alert(1)')).toBe('#')
    expect(safeUrl('data:text/html,<script>')).toBe('#')
    expect(safeUrl('/relative')).toBe('#')
    expect(safeUrl('not a url', '/fallback')).toBe('/fallback')
  })

  it('is escaped when interpolated into an attribute', () => {
    expect(html`<a href="${safeUrl('https://x.example/?q="><script>')}">`.html).toBe('<a href="https://x.example/?q=%22%3E%3Cscript%3E">')
  })
})

describe('page', () => {
  const res = page({ title: 'Pay <now> & "then"', body: html`<main><h1>Hello</h1></main>` })

  it('is a complete HTML5 document with the title escaped and the body inside', () => {
    expect(res.body.startsWith('<!doctype html>\n<html lang="en">')).toBe(true)
    expect(res.body).toContain('<meta charset="utf-8">')
    expect(res.body).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">')
    expect(res.body).toContain('<title>Pay &lt;now&gt; &amp; &quot;then&quot;</title>')
    expect(res.body).toContain('<main><h1>Hello</h1></main>')
    expect(res.body.trimEnd().endsWith('</html>')).toBe(true)
  })

  it('uses inline CSS only: no scripts, no external assets', () => {
    expect(res.body).toMatch(/<style>[^<]+<\/style>/)
    expect(res.body).not.toMatch(/<script|<link|<img|<iframe|@import|url\(/i)
    expect(res.body).not.toMatch(/\s(src|srcset)=/i)
    expect(res.body).toContain('@media (prefers-color-scheme:dark)')
  })

  it('answers 200 unless told, with the security headers and the HTML content type', () => {
    expect(res.status).toBe(200)
    expect(res.headers).toEqual({ ...SECURITY_HEADERS, 'content-type': HTML_CONTENT_TYPE })
    expect(page({ title: 't', body: html``, status: 404 }).status).toBe(404)
  })

  it('renders an optional banner, a wide column and another language', () => {
    const p = page({ title: 't', body: html`<p>x</p>`, banner: html`TEST MODE`, wide: true, lang: 'fr' })
    expect(p.body).toContain('<header><div class="banner" role="note">TEST MODE</div></header>') // in a landmark, so moving by landmarks meets it
    expect(p.body).toContain('<div class="wrap wide">')
    expect(p.body).toContain('<html lang="fr">')
    expect(res.body).not.toContain('class="banner"')
  })
})

describe('security headers', () => {
  it('are exactly the strict set', () => {
    expect(SECURITY_HEADERS).toEqual({
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https: http:; frame-ancestors 'none'; base-uri 'none'",
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    })
    expect(Object.isFrozen(SECURITY_HEADERS)).toBe(true)
  })
})

describe('sendPage', () => {
  it('sends a page() response, or lays out page options, with status and headers', async () => {
    const app = Fastify()
    app.get('/a', async (_req, reply) => sendPage(reply, page({ title: 'A', body: html`<p>a</p>`, status: 201 })))
    app.get('/b', async (_req, reply) => sendPage(reply, { title: 'B', body: html`<p>${'<b>'}</p>`, status: 404 }))
    for (const [url, status, text] of [
      ['/a', 201, '<p>a</p>'],
      ['/b', 404, '<p>&lt;b&gt;</p>'],
    ] as const) {
      const r = await app.inject({ url })
      expect(r.statusCode).toBe(status)
      expect(r.headers['content-type']).toBe('text/html; charset=utf-8')
      for (const [k, v] of Object.entries(SECURITY_HEADERS)) expect(r.headers[k]).toBe(v)
      expect(r.body).toContain(text)
      expect(r.body).toContain('<!doctype html>')
    }
    await app.close()
  })
})

describe('hosted pages: accessibility', () => {
  const session: DashboardSession = { actorDid: 'did:plc:organizer000000000000000', environment: 'test', sessionId: 'ses_1', csrfToken: 'csrf-1', createdAt: '2030-01-01T00:00:00Z' }
  const TICKET = `ticket_${'a1'.repeat(12)}`
  const EVENT_URI = 'at://did:plc:organizer000000000000000/community.lexicon.calendar.event/a&b<c>'
  const event: OrganizerEventData = {
    organizerEvent: {
      eventUri: EVENT_URI,
      appDid: 'did:plc:app0000000000000000000000',
      environment: 'test',
      tiers: [{ ticketTypeId: 'tt_1', name: 'General', priceAmount: 0, currency: 'usd', capacity: 3, sold: 1, held: 0, available: 2 }],
      ticketPage: { tickets: [{ id: TICKET, ticketTypeId: 'tt_1', tierName: 'General', buyerDid: 'did:plc:buyer', status: 'issued', issuedAt: '2030-01-01T10:00:00Z' }], nextCursor: null },
    },
  }
  const checkout: CheckoutView = {
    id: 'chk_1', environment: 'test', status: 'pending', failureReason: null, failureMessage: null, recipientDid: 'did:plc:ada0000000000000000000',
    recipientName: 'Ada', paymentType: 'tip', holdId: null, description: 'A tip', currency: 'usd', amount: 1000, serviceFee: 0, buyerFee: 0, total: 1000,
    returnUrl: 'https://app.example.com/thanks', cancelUrl: 'https://app.example.com/cancel', expiresAt: '2030-01-01T00:00:00Z',
  }
  const inputOf = (body: string, id: string) => body.match(new RegExp(`<input [^>]*id="${id}"[^>]*>`))?.[0] ?? ''

  it("the dashboard's header links are in a named <nav> landmark", () => {
    expect(header(session).html).toMatch(/<nav aria-label="Dashboard"><a href="\/dashboard">Dashboard<\/a> <a href="\/dashboard\/events" id="nav-events">Your events<\/a><\/nav>/)
  })

  it('the card form marks the name optional in its visible label, and does not require it', () => {
    const body = checkoutFormPage(checkout, 'cko_test_x').body
    expect(body).toContain('<label for="name">Name on card (optional)</label>')
    expect(inputOf(body, 'name')).not.toContain('required')
    for (const id of ['number', 'expiry', 'cvc']) expect(inputOf(body, id)).toContain(' required')
  })

  it('a refused card form keeps the expiry (escaped) and the name, never the number or the CVC', () => {
    const body = checkoutFormPage(checkout, 'cko_test_x', { error: 'Your card number is invalid.', nameOnCard: 'Bea', expiry: '12/3"4', status: 400 }).body
    expect(inputOf(body, 'expiry')).toContain('value="12/3&quot;4"')
    expect(inputOf(body, 'name')).toContain('value="Bea"')
    expect(inputOf(body, 'number')).not.toContain('value=')
    expect(inputOf(body, 'cvc')).not.toContain('value=')
    // what the form posted: the one field as typed, or month and year; never more than the field holds
    expect(keptExpiry({ number: '4242424242424242', expiry: ' 12 / 34 ', cvc: '123' })).toBe('12 / 34')
    expect(keptExpiry({ expMonth: '1', expYear: '2031' })).toBe('1/2031')
    expect(keptExpiry({ expiry: '4242424242424242' })).toBeNull()
    expect(keptExpiry({ expiry: ['12/34', '12/34'] })).toBeNull()
    expect(keptExpiry(undefined)).toBeNull()
  })

  it("an event's page is titled with the event (escaped), and each Void form needs its required confirmation box", () => {
    const view = eventPage(session, event, null)
    const body = page(view).body
    expect(body).toContain('<title>at://did:plc:organizer000000000000000/community.lexicon.calendar.event/a&amp;b&lt;c&gt; – Tickets</title>')
    const form = body.match(new RegExp(`<form method="post" action="/dashboard/tickets/${TICKET}/void"[\\s\\S]*?</form>`))?.[0] ?? ''
    expect(form).toMatch(/<label[^>]*><input type="checkbox" name="confirm" value="yes" id="confirm-void-ticket_[0-9a-f]{24}" required> I understand<span class="visually-hidden"> that voiding ticket ticket_[0-9a-f]{24} cannot be undone<\/span><\/label>/)
    expect(form).toContain(`id="void-${TICKET}"`)
  })

  it('a Void post without the confirmation is refused with a clear message and voids nothing; with it, the ticket is voided', async () => {
    const asked: unknown[] = []
    const gateway = {
      query: async (_op: unknown, variables: unknown) => {
        asked.push(variables)
        return { voidTicket: { id: TICKET, status: 'voided', eventUri: EVENT_URI } }
      },
    } as unknown as GatewayClient
    const sessions = { getSession: async () => session } as unknown as DashboardSessions
    const app = Fastify()
    await app.register(dashboardPlugin, { gateway, sessions, secureCookies: false })
    const post = (form: Record<string, string>) =>
      app.inject({
        method: 'POST',
        url: `/dashboard/tickets/${TICKET}/void`,
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `${dashboardCookie('session', false).name}=dss_x` },
        body: new URLSearchParams(form).toString(),
      })
    try {
      for (const form of [{ csrf: 'csrf-1' }, { csrf: 'csrf-1', confirm: '' }, { csrf: 'csrf-1', confirm: 'no' }] as Record<string, string>[]) {
        const refused = await post(form)
        expect(refused.statusCode).toBe(400)
        expect(refused.headers['content-type']).toBe(HTML_CONTENT_TYPE)
        expect(refused.body).toContain('the ticket was not voided: tick &quot;I understand&quot;')
      }
      expect(asked).toEqual([])
      const voided = await post({ csrf: 'csrf-1', confirm: 'yes' })
      expect(voided.statusCode).toBe(303)
      expect(voided.headers.location).toBe(`/dashboard/events/view?uri=${encodeURIComponent(EVENT_URI)}`)
      expect(asked).toEqual([{ ticketId: TICKET }])
    } finally {
      await app.close()
    }
  })
})
