/**
 * `svc_delivery_attempt_lateness_seconds` (docs/operations.md): how long after it was due each attempt went out. A
 * job's first attempt is due when it was queued; a retry when the failed attempt said (its nextAttemptAt, carried in
 * the job as dueAt). Real BullMQ workers started late on purpose, a real receiver that fails once.
 */
import { createMetrics } from '@svc/operations'
import { startStack, type TestStack } from '../../stack'
import type { Receiver } from './helpers/receiver'
import { appWithReceiver, attemptsOf, queueTestDelivery, stackQueues, waitForStatus, type StackQueues } from './helpers/events'

let stack: TestStack
let queues: StackQueues
const receivers: Receiver[] = []

beforeAll(async () => {
  stack = await startStack('attempt-lateness', { allowLoopbackWebhooks: true, workers: false })
  queues = stackQueues(stack)
})
afterAll(async () => {
  await queues?.close()
  await stack?.stop()
  await Promise.all(receivers.map((r) => r.close()))
})

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

it('counts a first attempt late by the time no worker took it, and a retry from its nextAttemptAt', async () => {
  let answered = 0
  const { app } = await appWithReceiver(stack, receivers, () => (answered++ === 0 ? { status: 500 } : { status: 200 }))
  const id = await queueTestDelivery(stack, queues, app.did)
  // no worker runs yet: the first attempt is due and waits
  await sleep(1500)
  const metrics = createMetrics('events-workers')
  await stack.startWorkers({}, { metrics })
  await waitForStatus(stack, id, 'delivered', 30_000)

  const [first, second] = await attemptsOf(stack, id)
  expect([first!.outcome, second!.outcome]).toEqual(['failed', 'delivered'])
  // the retry's due time went with the job
  const job = (await queues.deliveries.getJob(id))!
  expect(job.data.dueAt).toBe(first!.nextAttemptAt!.getTime())

  const late = (await metrics.registry.getSingleMetric('svc_delivery_attempt_lateness_seconds')!.get()).values as { metricName?: string; labels: Record<string, string | number>; value: number }[]
  const of = (name: string, le?: number) => late.find((v) => v.metricName === name && v.labels.environment === 'test' && (le === undefined || v.labels.le === le))?.value
  expect(of('svc_delivery_attempt_lateness_seconds_count')).toBe(2)
  // the first waited the 1.5 s without workers; the retry went out when due (well within the 1.5 s)
  expect(of('svc_delivery_attempt_lateness_seconds_sum')).toBeGreaterThanOrEqual(1.5)
  expect(of('svc_delivery_attempt_lateness_seconds_bucket', 1)).toBe(1)
  expect(second!.attemptedAt.getTime()).toBeGreaterThanOrEqual(first!.nextAttemptAt!.getTime() - 5)
})
