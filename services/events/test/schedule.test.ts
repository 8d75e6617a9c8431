/**
 * The retry schedule (docs/events.md, "Delivery schedule"): 14 attempts, 13 waits adding up to 71 h 42 min, ±10 %
 * jitter, Retry-After lengthening a wait up to the next step only, DELIVERY_SCHEDULE_SCALE, and the Retry-After parser.
 */
import { DELAYS_MS, JITTER, MAX_ATTEMPTS, nextDelayMs, scheduleSpanMs } from '../src/domain/schedule'
import { parseRetryAfter } from '../src/delivery/retry-after'

const S = 1000
const M = 60 * S
const H = 60 * M
const noJitter = { scale: 1, random: () => 0.5 }

describe('the delivery schedule', () => {
  it('has 14 attempts and 13 waits, in the documented order', () => {
    expect(MAX_ATTEMPTS).toBe(14)
    expect(DELAYS_MS).toHaveLength(13)
    expect(DELAYS_MS).toEqual([5 * S, 30 * S, 2 * M, 10 * M, 30 * M, 1 * H, 2 * H, 4 * H, 6 * H, 8 * H, 12 * H, 16 * H, 22 * H])
    const waits = Array.from({ length: 13 }, (_, i) => nextDelayMs(i + 1, noJitter))
    expect(waits).toEqual(DELAYS_MS)
  })

  it('puts the 14th attempt 71 h 42 min (about 72 h) after the first', () => {
    const span = Array.from({ length: 13 }, (_, i) => nextDelayMs(i + 1, noJitter)!).reduce((a, b) => a + b, 0)
    expect(span).toBe(scheduleSpanMs())
    expect(span).toBe(71 * H + 42 * M + 35 * S)
    expect(span / H).toBeCloseTo(71.7, 1)
  })

  it('jitters every wait within ±10 %', () => {
    expect(JITTER).toBe(0.1)
    for (let attempt = 1; attempt < MAX_ATTEMPTS; attempt++) {
      const base = DELAYS_MS[attempt - 1]!
      expect(nextDelayMs(attempt, { scale: 1, random: () => 0 })).toBe(Math.round(base * 0.9))
      expect(nextDelayMs(attempt, { scale: 1, random: () => 0.999999 })).toBeLessThanOrEqual(Math.round(base * 1.1))
      expect(nextDelayMs(attempt, { scale: 1, random: () => 0.999999 })).toBeGreaterThanOrEqual(Math.floor(base * 1.0999))
      for (let i = 0; i < 50; i++) {
        const wait = nextDelayMs(attempt, { scale: 1 })!
        expect(wait).toBeGreaterThanOrEqual(Math.floor(base * 0.9))
        expect(wait).toBeLessThanOrEqual(Math.ceil(base * 1.1))
      }
    }
  })

  it('lets Retry-After lengthen a wait, but never beyond the next step', () => {
    // after attempt 1: 5 s, next step 30 s
    expect(nextDelayMs(1, noJitter, 20 * S)).toBe(20 * S)
    expect(nextDelayMs(1, noJitter, 3600 * S)).toBe(30 * S)
    // a shorter Retry-After never shortens the schedule
    expect(nextDelayMs(1, noJitter, 1 * S)).toBe(5 * S)
    expect(nextDelayMs(3, noJitter, 1 * S)).toBe(2 * M)
    // after attempt 12: 16 h, next step 22 h
    expect(nextDelayMs(12, noJitter, 48 * H)).toBe(22 * H)
    // after attempt 13 (no next step) the wait stays 22 h
    expect(nextDelayMs(13, noJitter, 48 * H)).toBe(22 * H)
    // a run with every wait stretched to the maximum still ends within about three days
    const stretched = Array.from({ length: 13 }, (_, i) => nextDelayMs(i + 1, { scale: 1, random: () => 0.999999 }, 1000 * H)!).reduce((a, b) => a + b, 0)
    expect(stretched / H).toBeLessThan(100)
  })

  it('applies the scale to every wait, Retry-After included', () => {
    const scale = 1 / 50_000
    expect(nextDelayMs(1, { scale, random: () => 0.5 })).toBe(0) // 5 s / 50 000 = 0.1 ms
    expect(nextDelayMs(13, { scale, random: () => 0.5 })).toBe(Math.round((22 * H) / 50_000))
    expect(nextDelayMs(4, { scale: 0.5, random: () => 0.5 })).toBe(5 * M)
    expect(nextDelayMs(1, { scale: 1 / 100, random: () => 0.5 }, 3600 * S)).toBe(300)
    expect(scheduleSpanMs(1 / 50_000)).toBeCloseTo(scheduleSpanMs() / 50_000, 6)
  })

  it('returns null after the 14th attempt and refuses attempt 0', () => {
    expect(nextDelayMs(14, noJitter)).toBeNull()
    expect(nextDelayMs(15, noJitter, 10 * S)).toBeNull()
    expect(() => nextDelayMs(0, noJitter)).toThrow(RangeError)
  })
})

describe('Retry-After', () => {
  const now = Date.parse('2026-06-01T12:00:00Z')
  it('reads delay-seconds and HTTP dates', () => {
    expect(parseRetryAfter('120', now)).toBe(120_000)
    expect(parseRetryAfter(['30', '60'], now)).toBe(30_000)
    expect(parseRetryAfter('Mon, 01 Jun 2026 12:01:30 GMT', now)).toBe(90_000)
  })
  it('ignores what is absent, malformed or past', () => {
    expect(parseRetryAfter(undefined, now)).toBeNull()
    expect(parseRetryAfter('', now)).toBeNull()
    expect(parseRetryAfter('0', now)).toBeNull()
    expect(parseRetryAfter('-5', now)).toBeNull()
    expect(parseRetryAfter('soon', now)).toBeNull()
    expect(parseRetryAfter('Mon, 01 Jun 2026 11:00:00 GMT', now)).toBeNull()
  })
})
