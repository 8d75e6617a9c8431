/** The pages toolkit: the escaping `html` template, `raw`, `safeUrl`, the layout and the security headers. */
import Fastify from 'fastify'
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
