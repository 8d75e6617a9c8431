/**
 * `Retry-After` (RFC 9110 §10.2.3) of a failed attempt: delay-seconds or an HTTP date. The schedule decides how far
 * it may lengthen the next wait (domain/schedule.ts, nextDelayMs).
 */

/** The wait a Retry-After value asks for, in ms; null when absent, malformed or already past. */
export function parseRetryAfter(value: string | string[] | undefined, now: number = Date.now()): number | null {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim()
  if (!raw) return null
  if (/^\d+$/.test(raw)) {
    const seconds = Number(raw)
    return seconds > 0 && Number.isSafeInteger(seconds) ? seconds * 1000 : null
  }
  const at = Date.parse(raw)
  if (Number.isNaN(at)) return null
  const wait = at - now
  return wait > 0 ? wait : null
}
