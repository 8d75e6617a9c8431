/**
 * A slow receiver does not take the delivery workers from every other app (delivery/fair-share.ts, docs/events.md
 * "Slow receivers"): once an attempt of an app environment has run DELIVERY_SLOW_MS, its attempts hold at most
 * DELIVERY_SLOW_APP_CONCURRENCY of the process's slots, its other deliveries wait (nothing sent or counted), and
 * another app's deliveries are sent meanwhile. Real BullMQ workers, real HTTP receivers.
 */
import type { DeliverySettings } from '@svc/config'
import pino from 'pino'
import { createMetrics } from '@svc/operations'
import { startStack, type TestStack } from '../../stack'
import type { AnswerFn, Receiver } from './helpers/receiver'
import { appWithReceiver as appWithNewReceiver, attemptsOf, getDelivery, queueTestDelivery, stackQueues, waitFor, waitForStatus, type StackQueues } from './helpers/events'

let stack: TestStack
let queues: StackQueues
const receivers: Receiver[] = []

beforeAll(async () => {
  stack = await startStack('slow-receivers', { allowLoopbackWebhooks: true, workers: false })
  queues = stackQueues(stack)
})
afterAll(async () => {
  await queues?.close()
  await stack?.stop()
  await Promise.all(receivers.map((r) => r.close()))
})

const logLines: { msg: string; appDid?: string; environment?: string }[] = []
const metrics = createMetrics('events-workers')

const workersWith = (delivery: Partial<DeliverySettings>) =>
  stack.startWorkers(delivery, { logger: pino({ level: 'info' }, { write: (line: string) => void logLines.push(JSON.parse(line)) }), metrics })

const appWithReceiver = (answer: AnswerFn) => appWithNewReceiver(stack, receivers, answer)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

it("a receiver that holds its requests gets at most its share of the worker's slots; another app's deliveries are sent meanwhile", async () => {
  let release!: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  let open = 0
  let mostOpen = 0
  // answers nothing until the test releases it (the attempts' timeout is longer than the test)
  const slow = await appWithReceiver(async () => {
    mostOpen = Math.max(mostOpen, ++open)
    await released
    open--
    return { status: 200 }
  })
  const quick = await appWithReceiver(() => ({ status: 200 }))
  const workers = await workersWith({ concurrency: 3, slowAppConcurrency: 1, slowMs: 100, timeoutMs: 60_000 })
  try {
    const first = await queueTestDelivery(stack, queues, slow.app.did)
    await waitFor(async () => slow.receiver.requests.length === 1, 'the first attempt to reach the slow receiver')
    // past slowMs: the app environment counts as slow while its first attempt is still waiting for an answer
    await sleep(500)
    const waiting = [] as string[]
    for (let i = 0; i < 4; i++) waiting.push(await queueTestDelivery(stack, queues, slow.app.did))
    const others = [await queueTestDelivery(stack, queues, quick.app.did), await queueTestDelivery(stack, queues, quick.app.did)]
    // two slots are free: without the share the slow app's deliveries would take them and these would wait for it
    for (const id of others) await waitForStatus(stack, id, 'delivered')
    expect(mostOpen).toBe(1)
    expect(slow.receiver.requests).toHaveLength(1)
    // the slow app's others waited: nothing sent, nothing counted, their jobs put back
    for (const id of waiting) {
      const job = (await queues.deliveries.getJob(id))!
      expect(await job.getState()).toBe('delayed')
      expect(job.data.deferrals).toBeGreaterThanOrEqual(1)
      expect(await attemptsOf(stack, id)).toEqual([])
    }
    const { logs } = await queues.deliveries.getJobLogs(waiting[0]!)
    expect(logs).toEqual([expect.stringMatching(/^waiting: the receiver is slow/)])
    // operators see it: one log line when the app environment became slow, and the deferrals counted
    expect(logLines.filter((l) => l.msg.startsWith('event receiver slow'))).toEqual([expect.objectContaining({ appDid: slow.app.did, environment: 'test' })])
    const deferred = (await metrics.registry.getSingleMetric('svc_delivery_deferred_total')!.get()).values[0]!.value
    expect(deferred).toBeGreaterThanOrEqual(waiting.length)

    // one that was held (its endpoint paused, then unpaused) and now waits for the slow receiver is pending again
    const wasHeld = waiting[0]!
    await stack.events.Delivery.updateOne({ _id: wasHeld }, { $set: { status: 'held' } })
    const heldJob = (await queues.deliveries.getJob(wasHeld))!
    await heldJob.updateData({ ...heldJob.data, holds: 3 })
    await heldJob.promote()
    await waitFor(async () => (await getDelivery(stack, wasHeld))?.status === 'pending', 'the held delivery to be pending again')
    await waitFor(async () => (await queues.deliveries.getJobState(wasHeld)) === 'delayed', 'the job to wait again')
    const deferredAgain = (await queues.deliveries.getJob(wasHeld))!.data
    expect(deferredAgain.holds).toBeUndefined()
    expect(deferredAgain.deferrals).toBeGreaterThanOrEqual(2)
    expect(slow.receiver.requests).toHaveLength(1)

    // once it answers, every one is delivered at its first attempt, still one at a time
    release()
    for (const id of [first, ...waiting]) {
      const d = await waitForStatus(stack, id, 'delivered', 60_000)
      expect(d.attemptCount).toBe(1)
    }
    expect(mostOpen).toBe(1)
    expect(slow.receiver.requests).toHaveLength(5)
  } finally {
    release()
    await workers.stop()
  }
})
