/**
 * Sending one attempt over HTTP (both channels): undici, one deadline for connecting, the answer's headers and the
 * part of its body we read, no redirects followed, at most 64 KiB of the answer read (the first 500 characters kept).
 *
 * Every connection goes through a connect check: the address a name resolves to *when connecting* must be allowed
 * for the delivery's environment (`deliveryAddressAllowed`: public, or loopback in test with
 * DEV_ALLOW_LOOPBACK_WEBHOOKS), so a name that resolved to a public address at configuration time and now
 * resolves inside (DNS rebinding) is refused before a byte is sent. There is one agent per environment, so a
 * kept-alive connection opened under the test policy is never reused for a live delivery.
 */
import { request, type Agent } from 'undici'
import { AddressRefusedError, createGuardedAgent, deliveryAddressAllowed, type AddressGuard } from '@svc/webhook-url'
import type { Environment } from '@svc/vocabulary'

/** How much of an answer is read; the rest is dropped with the connection. */
export const MAX_RESPONSE_BYTES = 64 * 1024
/** How much of the answer the attempt log keeps. */
export const RESPONSE_EXCERPT_CHARS = 500

export interface OutgoingRequest {
  url: string
  headers: Record<string, string>
  body: string
}

/** What came of one attempt on the wire. */
export interface AttemptResult {
  /** the answer's status; null when none came */
  statusCode: number | null
  durationMs: number
  /** why it is not delivered (null for a 2xx) */
  error: string | null
  /** the first 500 characters of the answer's body */
  responseExcerpt: string | null
  /** the answer's Retry-After header, raw */
  retryAfter: string | null
  /** the `error` of an XRPC error body (a 4xx whose whole body is `{"error": …}` JSON), read before the excerpt is cut */
  answerError?: string | null
  /**
   * true when the request surely never left: the connection was never made (refused, the name not resolved, the
   * connect check refused the address, the connect timed out). Any other attempt may have reached the receiver,
   * which may have processed it (an answer of any status, a deadline passed, a connection closed mid-request).
   */
  unsent?: boolean
}

/** The `error` name of an XRPC error answer (4xx: what isDuplicateDeliveryAnswer asks about), or null. */
function xrpcErrorOf(statusCode: number, text: string): string | null {
  if (statusCode < 400 || statusCode >= 500) return null
  try {
    const error = (JSON.parse(text) as { error?: unknown } | null)?.error
    return typeof error === 'string' ? error : null
  } catch {
    return null
  }
}

export function isDelivered(result: AttemptResult): boolean {
  return result.error === null && result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300
}

/**
 * A receiver's `DuplicateDelivery` error (a 4xx whose body's `error` names it), on either channel: the contract's
 * receiver rules (and receiveEvent's lexicon) name it for a delivery id the receiver has already processed, so the
 * delivery arrived.
 */
export function isDuplicateDeliveryAnswer(result: AttemptResult): boolean {
  if (result.statusCode === null || result.statusCode < 400 || result.statusCode >= 500) return false
  return result.answerError === 'DuplicateDelivery'
}

export interface AddressPolicy {
  environment: Environment
  allowLoopbackInTest: boolean
}

/** The delivery's connect check (`deliveryAddressAllowed`), and the error text of an attempt it refused. */
function deliveryGuard(policy: AddressPolicy): AddressGuard {
  return {
    allowed: (ip) => deliveryAddressAllowed(ip, policy),
    refusal(host, address) {
      const shown = host === address ? address : `${host} (${address})`
      const why =
        policy.environment === 'test' && !policy.allowLoopbackInTest
          ? 'is not a public address (loopback receivers need DEV_ALLOW_LOOPBACK_WEBHOOKS in test)'
          : 'is not a public address'
      return new AddressRefusedError(`refused to connect: ${shown} ${why}`)
    },
  }
}

/** An undici Agent whose every new connection passes the address check of `policy`. */
export function createDeliveryAgent(policy: AddressPolicy, connectTimeoutMs: number): Agent {
  // One answer per connection at a time; idle connections close soon (receivers are many and mostly idle).
  return createGuardedAgent(deliveryGuard(policy), connectTimeoutMs, { pipelining: 1, keepAliveTimeout: 4000 })
}

function causes(err: unknown): unknown[] {
  const out: unknown[] = []
  for (let e: unknown = err; e && out.length < 5; e = (e as { cause?: unknown }).cause) out.push(e)
  return out
}

/** How much of a failed request's reason the attempt log keeps (a resolver's or socket's message may quote the URL). */
export const ATTEMPT_ERROR_CHARS = 500

/** Errors raised before a connection was made: nothing of the request was sent. */
const NOT_CONNECTED_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT'])

/** Whether a request that got no answer surely never left (see AttemptResult.unsent). */
function neverConnected(err: unknown): boolean {
  const chain = causes(err)
  if (chain.some((e) => e instanceof AddressRefusedError)) return true
  const code = chain.map((e) => (e as { code?: unknown }).code).find((c): c is string => typeof c === 'string')
  return code !== undefined && NOT_CONNECTED_CODES.has(code)
}

/** A short, operator-readable reason for a request that got no answer. */
function describeError(err: unknown, url: URL): string {
  const reason = errorReason(err, url)
  return reason.length > ATTEMPT_ERROR_CHARS ? `${reason.slice(0, ATTEMPT_ERROR_CHARS - 1)}…` : reason
}

function errorReason(err: unknown, url: URL): string {
  const chain = causes(err)
  const refused = chain.find((e) => e instanceof AddressRefusedError)
  if (refused) return (refused as Error).message
  const code = chain.map((e) => (e as { code?: unknown }).code).find((c): c is string => typeof c === 'string')
  switch (code) {
    case 'ECONNREFUSED':
      return `connection refused by ${url.host}`
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `could not resolve ${url.hostname}`
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return `connection to ${url.host} closed before an answer`
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `timeout: could not connect to ${url.host}`
    default: {
      const message = chain.map((e) => (e as Error).message).find((m) => typeof m === 'string' && m !== '') ?? 'unknown error'
      return `request failed: ${code ? `${code}: ` : ''}${message}`
    }
  }
}

/** how long after the attempt's deadline undici's header and body timeouts would fire */
const UNDICI_TIMEOUT_MARGIN_MS = 1_000

function header(value: string | string[] | undefined): string | null {
  if (value === undefined) return null
  return Array.isArray(value) ? (value[0] ?? null) : value
}

/**
 * POSTs the request with one deadline (`timeoutMs`) for the whole exchange. Never throws for what the receiver or
 * the network did: that is the result's `error`.
 */
export async function sendAttempt(agent: Agent, req: OutgoingRequest, timeoutMs: number): Promise<AttemptResult> {
  const url = new URL(req.url)
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  const deadline = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    deadline.abort()
  }, timeoutMs)
  const timeoutText = `timeout: no answer within ${timeoutMs} ms`
  try {
    let res: Awaited<ReturnType<typeof request>>
    try {
      res = await request(url, {
        method: 'POST',
        headers: req.headers,
        body: req.body,
        dispatcher: agent,
        signal: deadline.signal,
        // the deadline above ends the exchange; undici's own limits only back it up (set at the deadline, they raced
        // it and a silent receiver was logged as `UND_ERR_HEADERS_TIMEOUT` rather than as a timeout)
        headersTimeout: timeoutMs + UNDICI_TIMEOUT_MARGIN_MS,
        bodyTimeout: timeoutMs + UNDICI_TIMEOUT_MARGIN_MS,
      })
    } catch (err) {
      // past the deadline the request may have been sent, whatever the error says
      const unsent = !timedOut && neverConnected(err)
      return { statusCode: null, durationMs: elapsed(), error: timedOut ? timeoutText : describeError(err, url), responseExcerpt: null, retryAfter: null, ...(unsent ? { unsent } : {}) }
    }
    const statusCode = res.statusCode
    const chunks: Buffer[] = []
    let size = 0
    try {
      for await (const chunk of res.body) {
        const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array)
        chunks.push(buf)
        size += buf.length
        if (size >= MAX_RESPONSE_BYTES) break // leaving the loop destroys the body (and its connection)
      }
    } catch {
      // The status came in time; a body cut short (deadline, reset) only shortens the excerpt.
    }
    const text = Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8')
    const ok = statusCode >= 200 && statusCode < 300
    let error: string | null = null
    if (!ok) error = statusCode >= 300 && statusCode < 400 ? `HTTP ${statusCode} (redirects are not followed)` : `HTTP ${statusCode}`
    return {
      statusCode,
      durationMs: elapsed(),
      error,
      // U+0000 as U+FFFD: PostgreSQL (under FerretDB) stores no NUL in text, and an attempt whose outcome cannot be
      // written is sent again and again
      responseExcerpt: text === '' ? null : text.slice(0, RESPONSE_EXCERPT_CHARS).replaceAll('\u0000', '\uFFFD'),
      // the whole answer read (up to MAX_RESPONSE_BYTES): a long message must not hide the error's name
      answerError: xrpcErrorOf(statusCode, text),
      retryAfter: header(res.headers['retry-after']),
    }
  } finally {
    clearTimeout(timer)
  }
}
