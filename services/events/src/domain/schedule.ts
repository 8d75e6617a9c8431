/**
 * The retry schedule of a delivery: 14 attempts, the last about 72 hours after the first (docs/events.md has the
 * same table). `DELAYS_MS[i]` is the wait before attempt i + 2.
 */
export const MAX_ATTEMPTS = 14

const S = 1000
const M = 60 * S
const H = 60 * M

export const DELAYS_MS: readonly number[] = [5 * S, 30 * S, 2 * M, 10 * M, 30 * M, 1 * H, 2 * H, 4 * H, 6 * H, 8 * H, 12 * H, 16 * H, 22 * H]

/** ±10 % */
export const JITTER = 0.1

if (DELAYS_MS.length !== MAX_ATTEMPTS - 1) throw new Error('the schedule needs one delay per retry')

export interface ScheduleOptions {
  /** multiplies every delay (DELIVERY_SCHEDULE_SCALE); 1 = real time */
  scale: number
  /** [0, 1): 0.5 = no jitter; default Math.random */
  random?: () => number
}

/**
 * The wait after failed attempt `attemptsMade` (1-based: after the first attempt, 1) of a run, in ms, or null when
 * that was the last attempt. A Retry-After (ms) lengthens the wait, but never beyond the following step of the
 * schedule: a run stays about three days, at most 96 h for a receiver that asks for the longest wait every time.
 */
export function nextDelayMs(attemptsMade: number, opts: ScheduleOptions, retryAfterMs?: number | null): number | null {
  if (!Number.isInteger(attemptsMade) || attemptsMade < 1) throw new RangeError('attemptsMade starts at 1')
  if (attemptsMade >= MAX_ATTEMPTS) return null
  const base = DELAYS_MS[attemptsMade - 1]!
  const random = opts.random ?? Math.random
  let delay = base * (1 + JITTER * (2 * random() - 1))
  if (retryAfterMs != null && retryAfterMs > 0) {
    const ceiling = DELAYS_MS[attemptsMade] ?? base
    delay = Math.max(delay, Math.min(retryAfterMs, ceiling))
  }
  return Math.max(0, Math.round(delay * opts.scale))
}

/**
 * The longest wait between two attempts of a run at the given scale (its last step, jitter included; a minute at
 * least, for the queue's own delays at a small scale): an endpoint failing all along while a delivery runs is tried
 * at least this often (endpoint-health.ts).
 */
export function longestWaitMs(scale = 1): number {
  return Math.max(60_000, Math.max(...DELAYS_MS) * (1 + JITTER) * scale)
}

/** When the last attempt falls after the first, without jitter, at the given scale (ms). */
export function scheduleSpanMs(scale = 1): number {
  return DELAYS_MS.reduce((a, b) => a + b, 0) * scale
}
