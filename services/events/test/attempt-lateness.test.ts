/**
 * How late an attempt starts (svc_delivery_attempt_lateness_seconds): from the job's dueAt, or for a job's first
 * pick-up from when it was queued; not counted while it waited on the app (held, deferred) or when the job cannot say.
 */
import type { DeliveryJob } from '../src/queues'
import { attemptLateMs } from '../src/delivery/processor'

const job = (data: Partial<DeliveryJob>, more: { timestamp?: number; delay?: number; attemptsMade?: number } = {}) => ({
  data: { deliveryId: 'whd_x', ...data },
  timestamp: more.timestamp ?? 10_000,
  opts: more.delay === undefined ? {} : { delay: more.delay },
  attemptsMade: more.attemptsMade ?? 0,
})

it('a first pick-up is due when queued, after its delay', () => {
  expect(attemptLateMs(job({}), 12_500)).toBe(2_500)
  expect(attemptLateMs(job({}, { delay: 2_000 }), 12_500)).toBe(500)
  // picked up a moment early by the clock: not negative
  expect(attemptLateMs(job({}, { delay: 2_000 }), 11_000)).toBe(0)
})

it('a retry is due at the dueAt its failed attempt set', () => {
  expect(attemptLateMs(job({ dueAt: 50_000 }, { attemptsMade: 3 }), 50_040)).toBe(40)
  // a retry of a job made before jobs carried dueAt: its queueing time says nothing of this attempt
  expect(attemptLateMs(job({}, { attemptsMade: 3 }), 50_040)).toBeNull()
})

it('an attempt that waited on the app is not counted', () => {
  expect(attemptLateMs(job({ dueAt: 50_000, heldSince: 40_000, holds: 2 }), 90_000)).toBeNull()
  expect(attemptLateMs(job({ dueAt: 50_000, deferrals: 1 }), 90_000)).toBeNull()
})
