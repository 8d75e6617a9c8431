/** Errors the SDK throws, and which of them are worth retrying. */

/** Response header carrying the id of the request in the service's request log. */
export const REQUEST_ID_HEADER = 'svc-request-id'

/**
 * A failed call. `status` is the HTTP status (0 when no response arrived), `error` the contract's error code
 * (`AppEnvironmentNotConfigured`, `InvalidToken`, ...) or one of the SDK's own: `NetworkError` (no response),
 * `Timeout` (the per-request timeout elapsed), `InvalidResponse` (a body that is not the expected JSON),
 * `HttpError` (an error status without a contract body).
 */
export class SvcError extends Error {
  override readonly name = 'SvcError'
  readonly status: number
  readonly error: string
  /** The `Svc-Request-Id` response header (quote it to support), null when there was no response or header. */
  readonly requestId: string | null
  /** Parsed `Retry-After` (ms) of an error response (the service sends it with 429 and 503), when given. */
  readonly retryAfterMs: number | undefined
  /** The NSID called. */
  readonly nsid: string

  constructor(init: {
    status: number
    error: string
    message: string
    requestId?: string | null
    retryAfterMs?: number
    nsid: string
    cause?: unknown
  }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause })
    this.status = init.status
    this.error = init.error
    this.requestId = init.requestId ?? null
    this.retryAfterMs = init.retryAfterMs
    this.nsid = init.nsid
  }

  /**
   * True for failures that may succeed when repeated unchanged: no response (network, timeout), 408, 429, and 5xx
   * except 501 (MethodNotImplemented is permanent). Contract errors (4xx) are not transient.
   */
  get transient(): boolean {
    return isTransientStatus(this.status)
  }
}

export function isTransientStatus(status: number): boolean {
  return status === 0 || status === 408 || status === 429 || (status >= 500 && status !== 501)
}

/** Whether an error thrown by a client call is worth retrying unchanged (see SvcError.transient). */
export function isTransientError(err: unknown): boolean {
  return err instanceof SvcError && err.transient
}

/** `Retry-After` as milliseconds: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000
  // an HTTP date names its day and month; Date.parse also reads '1.5' or '-1' as dates long past (a wait of 0)
  if (!/[a-z]/i.test(trimmed)) return undefined
  const at = Date.parse(trimmed)
  if (Number.isNaN(at)) return undefined
  return Math.max(0, at - now)
}

/** Thrown by pollPaymentStatus when `timeoutMs` elapses before a terminal status. */
export class PollTimeoutError extends Error {
  override readonly name = 'PollTimeoutError'
  constructor(
    /** The last status seen, undefined when no poll succeeded. */
    readonly lastStatus: string | undefined,
    /** Status requests made. */
    readonly attempts: number,
    readonly timeoutMs: number,
  ) {
    super(`payment status still ${lastStatus ?? 'unknown'} after ${timeoutMs} ms (${attempts} requests)`)
  }
}
