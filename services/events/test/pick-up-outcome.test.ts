/**
 * How a delivery job that threw is counted in `svc_delivery_jobs_total` (docs/operations.md): the run's last attempt
 * is `failed` also when BullMQ still counted attempts left (an attempt a dead worker left came first: the run counts
 * it, BullMQ does not), an earlier one `retrying`, anything thrown outside an attempt `error`.
 */
import { AttemptFailedError, failedPickUpOutcome, LastAttemptFailedError } from '../src/delivery/processor'

it('the run\'s last failed attempt is failed, an earlier one retrying, anything else error', () => {
  expect(failedPickUpOutcome(new LastAttemptFailedError('attempt 14 failed: HTTP 500', null))).toBe('failed')
  expect(failedPickUpOutcome(new AttemptFailedError('attempt 3 failed: HTTP 500', 30_000))).toBe('retrying')
  expect(failedPickUpOutcome(new Error('connection closed'))).toBe('error')
  // BullMQ ends a job at once by the error's name, whatever attempts it counts left
  expect(new LastAttemptFailedError('x', null).name).toBe('UnrecoverableError')
})
