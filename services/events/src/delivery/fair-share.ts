/**
 * The delivery workers' slots shared between app environments (docs/events.md, "Slow receivers"). Every app shares
 * one queue and each worker process's DELIVERY_CONCURRENCY slots; an attempt holds its slot until the receiver
 * answers, up to DELIVERY_TIMEOUT_MS. An app environment whose receiver is slow (an attempt of its took, or is still
 * taking, DELIVERY_SLOW_MS or more, within the last SLOW_FOR_MS) may hold at most DELIVERY_SLOW_APP_CONCURRENCY of
 * this process's slots at once; its other attempts wait (the job goes back to delayed, nothing sent or counted). A
 * receiver that answers in time is never held back, so one app's burst still gets every slot.
 *
 * Kept in the process, not in Redis: what is shared is this process's slots, and nothing is left behind by a process
 * that stops.
 */
export const SLOW_FOR_MS = 60_000

export interface FairShare {
  /**
   * A slot for one attempt to `key` (an app environment), or null when its receiver is slow and it holds its share.
   * `sending()` when the request goes out (the receiver's time counts from there), `end()` when it is over.
   */
  begin(key: string): { sending(): void; end(): void } | null
  /** whether attempts to `key` count as slow now */
  isSlow(key: string): boolean
}

export function createFairShare(opts: {
  slowMs: number
  slowAppConcurrency: number
  /** called when `key` becomes slow (not while it stays so) */
  onSlow?: (key: string) => void
  now?: () => number
}): FairShare {
  const now = opts.now ?? Date.now
  const inFlight = new Map<string, number>()
  const slowUntil = new Map<string, number>()

  const isSlow = (key: string): boolean => {
    const until = slowUntil.get(key)
    if (until === undefined) return false
    if (until > now()) return true
    slowUntil.delete(key)
    return false
  }
  const markSlow = (key: string) => {
    const was = isSlow(key)
    slowUntil.set(key, now() + SLOW_FOR_MS)
    if (!was) opts.onSlow?.(key)
    // app environments that were slow once and never sent again: forgotten once their time is over
    if (slowUntil.size > 10_000) for (const [k, until] of slowUntil) if (until <= now()) slowUntil.delete(k)
  }

  return {
    isSlow,
    begin(key) {
      const held = inFlight.get(key) ?? 0
      if (held >= opts.slowAppConcurrency && isSlow(key)) return null
      inFlight.set(key, held + 1)
      let timer: NodeJS.Timeout | null = null
      let ended = false
      return {
        // slow from the moment the receiver has had the request for slowMs, not only once it answers (one that never
        // answers would otherwise take every slot for DELIVERY_TIMEOUT_MS first); our own reads before it do not count
        sending() {
          if (ended || timer) return
          timer = setTimeout(() => markSlow(key), opts.slowMs)
          timer.unref()
        },
        end() {
          if (ended) return
          ended = true
          if (timer) clearTimeout(timer)
          const left = (inFlight.get(key) ?? 1) - 1
          if (left > 0) inFlight.set(key, left)
          else inFlight.delete(key)
        },
      }
    },
  }
}

/** The wait before a deferred attempt is picked up again, after `deferrals` earlier ones: 1 s doubling to 30 s, ±20%. */
export function deferDelayMs(deferrals: number, random: () => number = Math.random): number {
  const base = Math.min(1000 * 2 ** Math.max(0, deferrals), 30_000)
  return Math.round(base * (0.8 + 0.4 * random()))
}
