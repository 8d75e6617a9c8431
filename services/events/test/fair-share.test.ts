/** The share of a worker process's slots that a slow receiver's app environment may hold (delivery/fair-share.ts). */
import { createFairShare, deferDelayMs, SLOW_FOR_MS } from '../src/delivery/fair-share'

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

test('a receiver that answers in time is never held back: every slot, however many', () => {
  const share = createFairShare({ slowMs: 60_000, slowAppConcurrency: 1 })
  const slots = Array.from({ length: 50 }, () => share.begin('did:web:a test'))
  expect(slots.every((s) => s !== null)).toBe(true)
  for (const s of slots) s!.end()
  expect(share.isSlow('did:web:a test')).toBe(false)
})

test('an attempt still running at slowMs makes its app environment slow: then it holds at most its share, the others are not held back', async () => {
  const becameSlow: string[] = []
  const share = createFairShare({ slowMs: 20, slowAppConcurrency: 2, onSlow: (key) => becameSlow.push(key) })
  const first = share.begin('slow test')!
  const second = share.begin('slow test')!
  first.sending()
  second.sending()
  await sleep(60)
  expect(share.isSlow('slow test')).toBe(true)
  // told once, though both attempts ran past slowMs
  expect(becameSlow).toEqual(['slow test'])
  expect(share.begin('slow test')).toBeNull()
  // another app environment, and the same app's other environment, are not slow
  expect(share.begin('slow live')).not.toBeNull()
  expect(share.begin('other test')).not.toBeNull()
  // a slot given back lets one more start; ending twice gives back one
  first.end()
  first.end()
  const third = share.begin('slow test')
  expect(third).not.toBeNull()
  expect(share.begin('slow test')).toBeNull()
  second.end()
  third!.end()
})

test('an attempt that ends before slowMs, or whose request has not gone out, leaves the app environment as it was; slowness ends SLOW_FOR_MS after it was last seen', async () => {
  let now = 1_000_000
  const share = createFairShare({ slowMs: 30, slowAppConcurrency: 1, now: () => now })
  const quick = share.begin('quick test')!
  quick.sending()
  quick.end()
  // our own reads before the request (the job's write, the signing secrets) are not the receiver's time
  const preparing = share.begin('preparing test')!
  await sleep(60)
  expect(share.isSlow('quick test')).toBe(false)
  expect(share.isSlow('preparing test')).toBe(false)
  preparing.end()
  const held = share.begin('slow test')!
  held.sending()
  await sleep(60)
  expect(share.isSlow('slow test')).toBe(true)
  now += SLOW_FOR_MS - 1
  expect(share.begin('slow test')).toBeNull()
  now += 1
  expect(share.isSlow('slow test')).toBe(false)
  const next = share.begin('slow test')
  expect(next).not.toBeNull()
  held.end()
  next!.end()
})

test('a deferred attempt waits 1 s, doubling to 30 s, each ±20 %', () => {
  expect([0, 1, 2, 3, 4, 5, 10].map((n) => deferDelayMs(n, () => 0.5))).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000])
  expect(deferDelayMs(0, () => 0)).toBe(800)
  expect(deferDelayMs(10, () => 1)).toBe(36_000)
})
