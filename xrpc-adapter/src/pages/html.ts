/**
 * Server-rendered HTML for the pages the checkout host serves (hosted checkout, dashboard): an escaping `html`
 * tagged template, one layout (`page`) with inline CSS only, and the strict security headers every page response
 * carries. No client-side JavaScript, no external assets.
 *
 * Escaping rule: every interpolated value is escaped (`& < > " '`), which makes it safe as element text and as a
 * *quoted* attribute value. Only values made by `html` itself or wrapped in `raw()` are inserted as they are.
 * Arrays are rendered item by item (same rule) and joined; `null`, `undefined` and `false` render nothing, so
 * `${cond && html`…`}` works. URLs from outside go through `safeUrl` before they land in an `href`.
 */
import type { FastifyReply } from 'fastify'

const RAW = Symbol.for('svc.pages.raw-html')

/** A piece of markup that is inserted without escaping. Make one with `html` (safe) or `raw` (trusted text only). */
export interface RawHtml {
  readonly [RAW]: true
  readonly html: string
  toString(): string
}

function makeRaw(value: string): RawHtml {
  return { [RAW]: true, html: value, toString: () => value }
}

/** Marks trusted markup (never user or upstream data) to be inserted as it is. */
export function raw(markup: string): RawHtml {
  return makeRaw(String(markup))
}

/** The type of `html` results (an alias, for callers that prefer the shorter name). */
export type Html = RawHtml

export function isRawHtml(value: unknown): value is RawHtml {
  return typeof value === 'object' && value !== null && (value as { [RAW]?: unknown })[RAW] === true
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
const ESCAPE_RE = /[&<>"']/g

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(ESCAPE_RE, (c) => ESCAPES[c]!)
}

function render(value: unknown): string {
  if (value === null || value === undefined || value === false) return ''
  if (isRawHtml(value)) return value.html
  if (Array.isArray(value)) return value.map(render).join('')
  return escapeHtml(String(value))
}

/** Tagged template: the literal parts are markup, every `${value}` is escaped unless it is RawHtml. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): RawHtml {
  let out = strings[0] ?? ''
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '')
  return makeRaw(out)
}

/** The URL when it is an absolute http(s) URL, else `fallback`: keeps `javascript:` and friends out of an href. */
export function safeUrl(value: string, fallback = '#'): string {
  try {
    const url = new URL(value)
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : fallback
  } catch {
    return fallback
  }
}

/**
 * Headers of every page response (and of redirects and errors from page routes): nothing loads but inline styles,
 * forms post to this host or to an http(s) app URL (the redirects that end a checkout are form navigations),
 * no framing, no referrer (page URLs carry capability tokens), never cached.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' https: http:; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
})

export const HTML_CONTENT_TYPE = 'text/html; charset=utf-8'

/** Sets the security headers on a reply (for responses that are not pages: redirects, empty answers). */
export function setSecurityHeaders(reply: FastifyReply): FastifyReply {
  return reply.headers({ ...SECURITY_HEADERS })
}

/** A complete page response, independent of the web framework. */
export interface HtmlResponse {
  status: number
  headers: Record<string, string>
  body: string
}

export interface PageOptions {
  /** the document title (escaped) */
  title: string
  /** the page content, inside the centred column */
  body: RawHtml
  /** HTTP status, 200 unless given */
  status?: number
  /** a full-width strip above the content (e.g. a TEST MODE banner) */
  banner?: RawHtml | null
  /** a wider column (60rem instead of 32rem), for tables */
  wide?: boolean
  /** `lang` of the document, `en` unless given */
  lang?: string
}

const STYLES = `
:root{color-scheme:light dark;--bg:#f5f6f8;--fg:#1b1f24;--muted:#5b6470;--card:#fff;--line:#dde1e6;--accent:#1f5fd6;--accent-fg:#fff;--ok:#137333;--ok-bg:#e6f4ea;--err:#b3261e;--err-bg:#fce8e6;--warn:#7a4d00;--warn-bg:#ffe9b3;--focus:#1f5fd6;--field-line:#8a929c}
@media (prefers-color-scheme:dark){:root{--bg:#121417;--fg:#e8eaed;--muted:#a0a8b3;--card:#1c1f24;--line:#343a42;--accent:#5b8def;--accent-fg:#0b1b3a;--focus:#8ab4f8;--field-line:#6b7380;--ok:#81c995;--ok-bg:#1e3325;--err:#f28b82;--err-bg:#3b1f1d;--warn:#fdd663;--warn-bg:#3d3113}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
.banner{background:var(--warn-bg);color:var(--warn);text-align:center;font-weight:700;font-size:.8rem;letter-spacing:.08em;padding:.4rem 1rem;text-transform:uppercase}
.wrap{max-width:32rem;margin:0 auto;padding:1.5rem 1rem 3rem}
.wrap.wide{max-width:60rem}
.card,.wrap>main{display:block;overflow-x:auto;background:var(--card);border:1px solid var(--line);border-radius:12px;padding:1.5rem;box-shadow:0 1px 3px rgba(0,0,0,.06)}
section{margin:1.25rem 0}
h1{font-size:1.4rem;line-height:1.25;margin:0 0 .25rem;overflow-wrap:anywhere}
h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
p{margin:.5rem 0}
a{color:var(--accent)}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85em;overflow-wrap:anywhere}
.muted,.hint{color:var(--muted)}
.hint{font-size:.875rem}
.small{font-size:.875rem}
.eyebrow{color:var(--muted);font-size:.8rem;text-transform:uppercase;letter-spacing:.06em;margin:0 0 .25rem}
.summary{margin:1.25rem 0;padding:0;border-top:1px solid var(--line)}
.summary>div{display:flex;justify-content:space-between;gap:1rem;padding:.6rem 0;border-bottom:1px solid var(--line)}
.summary dt{color:var(--muted)}
.summary dd{margin:0;font-variant-numeric:tabular-nums;text-align:right}
.summary .total dt,.summary .total dd{color:var(--fg);font-weight:700}
.alert{border-radius:8px;padding:.75rem 1rem;margin:1rem 0}
.tickets{list-style:none;padding:0}.ticket{border:1px solid #ddd;border-radius:8px;padding:1rem;margin:.75rem 0;text-align:center;overflow-wrap:anywhere}
.qr svg{width:200px;height:200px;background:#fff}
.alert.error{background:var(--err-bg);color:var(--err)}
.alert.ok{background:var(--ok-bg);color:var(--ok)}
.alert.info{background:var(--warn-bg);color:var(--warn)}
form{margin:0}
.field{margin:0 0 1rem}
.field label{display:block;font-size:.875rem;font-weight:600;margin:0 0 .3rem}
.row{display:flex;gap:.75rem}
.row>.field{flex:1;min-width:0}
input[type=text],input[type=email],input[type=number],select,textarea{width:100%;font:inherit;font-size:16px;color:inherit;background:var(--card);border:1px solid var(--field-line);border-radius:8px;padding:.6rem .7rem}
input:focus,select:focus,textarea:focus,button:focus-visible,a:focus-visible{outline:3px solid var(--focus);outline-offset:1px}
.btn{display:block;width:100%;font:inherit;font-weight:600;font-size:1rem;text-align:center;text-decoration:none;border:0;border-radius:8px;padding:.8rem 1rem;background:var(--accent);color:var(--accent-fg);cursor:pointer}
.btn:hover,button.primary:hover{filter:brightness(1.08)}
button.primary,button.secondary{font:inherit;font-weight:600;border-radius:8px;padding:.6rem 1rem;cursor:pointer}
button.primary{background:var(--accent);color:var(--accent-fg);border:1px solid var(--accent)}
button.secondary{background:transparent;color:var(--fg);border:1px solid var(--line)}
.btn-link,button.link{display:inline;width:auto;background:none;border:0;padding:0;font:inherit;color:var(--accent);text-decoration:underline;cursor:pointer}
form.inline{display:inline}
.actions{display:flex;flex-wrap:wrap;gap:.5rem;margin:1rem 0}
header.bar{display:flex;flex-wrap:wrap;align-items:center;justify-content:space-between;gap:.5rem 1rem;margin:0 0 1rem;font-size:.875rem}
.who{color:var(--muted);overflow-wrap:anywhere}
dl.terms{display:grid;grid-template-columns:max-content 1fr;gap:.4rem 1rem;margin:1rem 0}
dl.terms dt{color:var(--muted)}
dl.terms dd{margin:0;overflow-wrap:anywhere}
.center{text-align:center}
.nowrap{white-space:nowrap}
.mt{margin-top:1rem}
.stack>*+*{margin-top:1rem}
table{width:100%;border-collapse:collapse}
th,td{text-align:left;padding:.5rem;border-bottom:1px solid var(--line);overflow-wrap:anywhere}
.visually-hidden{position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}
footer{margin-top:1.5rem;text-align:center;color:var(--muted);font-size:.8rem}
`.trim()

/** A complete HTML5 document with the shared styles and the security headers. */
export function page(opts: PageOptions): HtmlResponse {
  const doc = html`<!doctype html>
<html lang="${opts.lang ?? 'en'}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex, nofollow">
<title>${opts.title}</title>
<style>${raw(STYLES)}</style>
</head>
<body>
${opts.banner ? html`<header><div class="banner" role="note">${opts.banner}</div></header>` : ''}
<div class="wrap${opts.wide ? ' wide' : ''}">
${opts.body}
</div>
</body>
</html>
`
  return { status: opts.status ?? 200, headers: { ...SECURITY_HEADERS, 'content-type': HTML_CONTENT_TYPE }, body: doc.html }
}

/** Sends a page through Fastify: a ready response from `page()`, or the options of one (laid out here). */
export function sendPage(reply: FastifyReply, input: HtmlResponse | PageOptions): FastifyReply {
  const response = isRawHtml(input.body) ? page(input as PageOptions) : (input as HtmlResponse)
  return reply.code(response.status).headers(response.headers).send(response.body)
}
