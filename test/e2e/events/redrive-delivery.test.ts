/**
 * Redrive end to end, with the stack's real event workers and a local receiver (the schedule at 1/50 000 of real
 * time): a test event through the developer route fails its whole 14-attempt run, the receiver recovers, 20 parallel
 * redrives through `POST /api/webhooks/atm` queue it once, and the delivery arrives exactly once more with the same id
 * and body, attempt 15 of the log. A redrive's run has all 14 attempts, also after a run whose job was added again for
 * the attempts it had left. A test delivery at the end of its retention is not redriven, and a job whose delivery was
 * deleted during its attempt ends.
 */
import mongoose from 'mongoose'
import pino from 'pino'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { ATTEMPT_LOG_LIMIT, createDelivery, ensureSigningSecret, MAX_ATTEMPTS, newDeliveryId, reconcileDeliveries } from '@svc/events'
import { startReceiver, type AnswerFn, type Receiver } from './helpers/receiver'
import { attemptsOf, configureChannel, getDelivery, queueTestDelivery, stackQueues, waitFor, waitForStatus } from './helpers/events'

let stack: TestStack
let receiver: Receiver
let app: TestApp
let key: string
let healthy = false
const down: Receiver[] = []

beforeAll(async () => {
  stack = await startStack('events-redrive-delivery', { allowLoopbackWebhooks: true })
  receiver = await startReceiver(() => (healthy ? { status: 200, body: { ok: true } } : { status: 500, body: 'down' }))
  app = await stack.newApp()
  key = await app.apiKey('test', ['webhook.test.write', 'webhook.deliveries.read', 'webhook.deliveries.redrive'])
  const res = await fetch(`${stack.apiUrl}/xrpc/money.svc.app.updateConfig`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${await app.jwt('money.svc.app.updateConfig')}` },
    body: JSON.stringify({ environment: 'test', webhookUrl: `${receiver.url}/hooks/svc` }),
  })
  expect(res.status).toBe(200)
})
afterAll(async () => {
  await stack?.stop()
  await receiver?.close()
  await Promise.all(down.map((r) => r.close()))
})

async function checkout(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.checkoutUrl}${path}${path.includes('?') ? '&' : '?'}app=${encodeURIComponent(app.did)}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  return { status: res.status, body: await res.json() }
}

test('a failed delivery, redriven 20 times in parallel, is sent once more and delivered', async () => {
  const created = await checkout('POST', '/api/app/developer/test-event')
  expect(created.status).toBe(200)
  const id: string = created.body.deliveryId

  const failed = await waitForStatus(stack, id, 'failed', 30_000)
  expect(failed.attemptCount).toBe(MAX_ATTEMPTS)
  expect(receiver.requests).toHaveLength(MAX_ATTEMPTS)
  const listed = await checkout('GET', '/api/webhooks/atm?status=failed')
  expect(listed.body.deliveries).toEqual([expect.objectContaining({ id, status: 'failed', attemptCount: MAX_ATTEMPTS })])
  expect(listed.body.deliveries[0].attempts.map((a: { number: number }) => a.number)).toEqual(Array.from({ length: MAX_ATTEMPTS }, (_, i) => i + 1))
  // the failed job keeps a bounded trace of its attempts and goes after a week: the delivery log is the record
  const queues = stackQueues(stack)
  try {
    const job = (await queues.deliveries.getJob(id))!
    expect(await job.getState()).toBe('failed')
    expect(job.stacktrace).toHaveLength(3)
    expect(job.opts.removeOnFail).toEqual({ age: 7 * 24 * 3600, count: 100_000 })
  } finally {
    await queues.close()
  }

  healthy = true
  const results = await Promise.all(Array.from({ length: 20 }, () => checkout('POST', '/api/webhooks/atm', { deliveryId: id })))
  expect(results.map((r) => r.status)).toEqual(Array(20).fill(200))
  expect(results.reduce((n, r) => n + r.body.queued, 0)).toBe(1)

  const delivered = await waitForStatus(stack, id, 'delivered', 20_000)
  expect(delivered.run).toBe(2)
  await waitFor(async () => receiver.requests.length === MAX_ATTEMPTS + 1, 'the redriven request')
  await new Promise((r) => setTimeout(r, 500))
  expect(receiver.requests).toHaveLength(MAX_ATTEMPTS + 1)
  const [first, last] = [receiver.requests[0]!, receiver.requests[MAX_ATTEMPTS]!]
  expect(last.headers['webhook-id']).toBe(id)
  expect(last.headers['svc-delivery-id']).toBe(id)
  expect(last.body).toBe(first.body)
  const attempts = await attemptsOf(stack, id)
  expect(attempts.map((a) => [a.number, a.run, a.outcome])).toEqual([
    ...Array.from({ length: MAX_ATTEMPTS }, (_, i) => [i + 1, 1, 'failed']),
    [MAX_ATTEMPTS + 1, 2, 'delivered'],
  ])
  // delivered: a further redrive sends it again only when asked, and a pending one is never queued twice
  const again = await checkout('GET', '/api/webhooks/atm')
  expect(again.body.deliveries[0]).toMatchObject({ id, status: 'delivered', attemptCount: MAX_ATTEMPTS + 1, failedAt: null, deliveredAt: expect.any(String) })
})

test('a redrive gives its run all 14 attempts, also when the last run was finished by a job added again for the attempts it had left', async () => {
  const unreachable = await startReceiver(() => ({ status: 500, body: 'down' }))
  down.push(unreachable)
  const other = await stack.newApp()
  await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, other.did, 'test')
  await configureChannel(stack, other.did, { url: `${unreachable.url}/hook` })
  const redriveKey = await other.apiKey('test', ['webhook.deliveries.redrive'])
  // two attempts of run 1 failed; Redis lost the job before the third, and the reconciler adds it for the other 12
  const d = await createDelivery(stack.deliveryLog, { id: newDeliveryId(), appDid: other.did, environment: 'test', eventId: null, eventType: 'app.webhook.test', source: 'test', createdAt: new Date(), data: { test: true } })
  const failedAt = new Date(Date.now() - 60_000)
  const failedAttempt = (number: number) => ({ number, run: 1, channel: 'webhook', url: null, attemptedAt: failedAt, durationMs: 3, statusCode: 500, outcome: 'failed', error: 'HTTP 500', responseExcerpt: null, nextAttemptAt: failedAt })
  await stack.events.Delivery.updateOne({ _id: d._id }, { $set: { attemptCount: 2, lastAttemptAt: failedAt, nextAttemptAt: failedAt }, $push: { attempts: { $each: [failedAttempt(1), failedAttempt(2)] } } })
  const queues = stackQueues(stack)
  try {
    await reconcileDeliveries(stack.events, queues.deliveries, pino({ level: 'silent' }))
    expect((await queues.deliveries.getJob(d._id))!.opts.attempts).toBe(MAX_ATTEMPTS - 2)
  } finally {
    await queues.close()
  }
  await waitForStatus(stack, d._id, 'failed', 30_000)
  expect(unreachable.requests).toHaveLength(MAX_ATTEMPTS - 2)

  const res = await fetch(`${stack.checkoutUrl}/api/webhooks/atm?app=${encodeURIComponent(other.did)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${redriveKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ deliveryId: d._id }),
  })
  expect({ status: res.status, body: await res.json() }).toEqual({ status: 200, body: { ok: true, queued: 1 } })
  await waitFor(async () => {
    const doc = await getDelivery(stack, d._id)
    return doc?.run === 2 && doc.status === 'failed'
  }, 'the redriven run to fail', 30_000)
  const attempts = await attemptsOf(stack, d._id)
  expect(attempts.filter((a) => a.run === 2)).toHaveLength(MAX_ATTEMPTS)
  expect(attempts.map((a) => a.number)).toEqual(Array.from({ length: 2 * MAX_ATTEMPTS }, (_, i) => i + 1))
  expect(unreachable.requests).toHaveLength(2 * MAX_ATTEMPTS - 2)
})

test('a delivered delivery redriven and delivered again keeps the time it was first delivered (the redrive window counts from it)', async () => {
  healthy = true
  const created = await checkout('POST', '/api/app/developer/test-event')
  const id: string = created.body.deliveryId
  await waitForStatus(stack, id, 'delivered', 20_000)
  const first = (await stack.events.Delivery.findById(id).lean())!
  expect(first.firstDeliveredAt).toEqual(first.deliveredAt)
  expect((await checkout('POST', '/api/webhooks/atm', { deliveryId: id })).body.queued).toBe(1)
  await waitFor(async () => (await stack.events.Delivery.findById(id).lean())?.run === 2 && (await stack.events.Delivery.findById(id).lean())?.status === 'delivered', 'the second run delivered')
  const second = (await stack.events.Delivery.findById(id).lean())!
  expect(second.deliveredAt!.getTime()).toBeGreaterThan(first.deliveredAt!.getTime())
  expect(second.firstDeliveredAt).toEqual(first.deliveredAt)
})

test('a full log keeps its newest ATTEMPT_LOG_LIMIT attempts, on FerretDB too (which ignores $slice)', async () => {
  healthy = true
  const created = await checkout('POST', '/api/app/developer/test-event')
  const id: string = created.body.deliveryId
  await waitForStatus(stack, id, 'delivered', 20_000)
  // a log one over the limit (kept whole by FerretDB before it was trimmed there)
  const at = new Date(Date.now() - 60_000)
  const logged = (number: number) => ({ number, run: 1, channel: 'webhook', url: null, attemptedAt: at, durationMs: 3, statusCode: 500, outcome: 'failed', error: 'HTTP 500', responseExcerpt: null, nextAttemptAt: at })
  const full = Array.from({ length: ATTEMPT_LOG_LIMIT + 1 }, (_, i) => logged(i + 1))
  await stack.events.Delivery.updateOne({ _id: id }, { $set: { attemptCount: full.length, attempts: full } })

  // the updates of this delivery, in order (the workers run in this process: mongoose's debug hook sees theirs)
  const updates: Array<Record<string, any>> = []
  // the hook the tests' index check set (packages/testing) keeps its turn
  const previous = mongoose.get('debug')
  mongoose.set('debug', function (this: unknown, collection: string, method: string, ...args: unknown[]) {
    const [filter, update] = args as [{ _id?: unknown } | undefined, Record<string, any>]
    if (collection === 'deliveries' && method === 'updateOne' && filter?._id === id) updates.push(update)
    if (typeof previous === 'function') (previous as (...a: unknown[]) => void).call(this, collection, method, ...args)
  })
  try {
    expect((await checkout('POST', '/api/webhooks/atm', { deliveryId: id })).body.queued).toBe(1)
    await waitFor(async () => {
      const doc = await getDelivery(stack, id)
      return doc?.run === 2 && doc.status === 'delivered'
    }, 'the second run delivered')
    await new Promise((r) => setTimeout(r, 300)) // a write after the outcome would be made by now
  } finally {
    mongoose.set('debug', previous)
  }
  // the log is trimmed before the outcome is written, never after it (a redrive may rewrite the delivery from then on)
  const outcome = updates.findIndex((u) => u.$set?.status === 'delivered')
  expect(outcome).toBeGreaterThan(0)
  expect(updates.slice(0, outcome).some((u) => u.$pop)).toBe(true)
  expect(updates.slice(outcome + 1)).toEqual([])
  const newest = Array.from({ length: ATTEMPT_LOG_LIMIT }, (_, i) => full.length + 2 - ATTEMPT_LOG_LIMIT + i)
  const numbers = async () => (await attemptsOf(stack, id)).map((a) => a.number)
  expect(await numbers()).toEqual(newest)
  const listed = await checkout('GET', '/api/webhooks/atm')
  const view = listed.body.deliveries.find((d: { id: string }) => d.id === id)
  expect(view.attempts.map((a: { number: number }) => a.number)).toEqual(newest)
})

/** A test event delivered, its endpoint paused, then redriven: the second run's job waits, held. */
async function redriveWhilePaused() {
  healthy = true
  const created = await checkout('POST', '/api/app/developer/test-event')
  const id: string = created.body.deliveryId
  const first = await waitForStatus(stack, id, 'delivered', 20_000)
  await configureChannel(stack, app.did, { url: `${receiver.url}/hooks/svc`, paused: true })
  const sent = receiver.requests.length
  expect((await checkout('POST', '/api/webhooks/atm', { deliveryId: id })).body.queued).toBe(1)
  await waitForStatus(stack, id, 'held', 20_000)
  return { id, first, sent }
}

test('a redriven run still held when 30 days have passed since the first delivery ends unsent when its endpoint is unpaused', async () => {
  const { id, first, sent } = await redriveWhilePaused()
  const queues = stackQueues(stack)
  try {
    // the run's job knows when receivers may forget the id: 30 days after the attempt that first reached the receiver
    // (the one that delivered it: sent before it was answered)
    const job = (await queues.deliveries.getJob(id))!
    expect(first.firstReachedAt).toEqual((await attemptsOf(stack, id))[0]!.attemptedAt)
    expect(first.firstReachedAt!.getTime()).toBeLessThanOrEqual(first.firstDeliveredAt!.getTime())
    expect(job.data.sendBefore).toBe(first.firstReachedAt!.getTime() + 30 * 24 * 3600 * 1000)
    // those 30 days pass while the endpoint is paused
    await job.updateData({ ...job.data, sendBefore: Date.now() - 1 })
    await configureChannel(stack, app.did, { url: `${receiver.url}/hooks/svc`, paused: false })
    const ended = await waitForStatus(stack, id, 'failed', 20_000)
    expect(ended.run).toBe(2)
    expect(ended.lastError).toMatch(/^not sent: first sent more than 30 days ago/)
    expect((await attemptsOf(stack, id)).filter((a) => a.run === 2)).toEqual([])
    await new Promise((r) => setTimeout(r, 500))
    expect(receiver.requests).toHaveLength(sent)
  } finally {
    await queues.close()
  }
})

test('a redriven run queued before jobs carried sendBefore reads the delivery for it: held past 30 days, it ends unsent too', async () => {
  const { id, sent } = await redriveWhilePaused()
  const queues = stackQueues(stack)
  try {
    // a job of the earlier version, and the delivery first delivered 31 days ago
    const job = (await queues.deliveries.getJob(id))!
    const { sendBefore: _dropped, ...legacy } = job.data
    await job.updateData(legacy)
    await stack.events.Delivery.updateOne({ _id: id }, { $set: { firstDeliveredAt: new Date(Date.now() - 31 * 24 * 3600 * 1000) } })
    await configureChannel(stack, app.did, { url: `${receiver.url}/hooks/svc`, paused: false })
    const ended = await waitForStatus(stack, id, 'failed', 20_000)
    expect(ended.lastError).toMatch(/^not sent: first sent more than 30 days ago/)
    await new Promise((r) => setTimeout(r, 500))
    expect(receiver.requests).toHaveLength(sent)
  } finally {
    await queues.close()
  }
})

const DAY_MS = 24 * 3600 * 1000

/** A new app whose webhook goes to a receiver answering `answer` (or to a port nothing listens on), and its redrive calls. */
async function appReceiving(answer: AnswerFn | 'closed') {
  const r = await startReceiver(answer === 'closed' ? undefined : answer)
  if (answer === 'closed') await r.close()
  else down.push(r)
  const other = await stack.newApp()
  await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, other.did, 'test')
  const url = `${r.url}/hook`
  await configureChannel(stack, other.did, { url })
  const redriveKey = await other.apiKey('test', ['webhook.deliveries.redrive'])
  const redrive = async (body: unknown) => {
    const res = await fetch(`${stack.checkoutUrl}/api/webhooks/atm?app=${encodeURIComponent(other.did)}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${redriveKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return { status: res.status, body: await res.json() }
  }
  const queue = async () => {
    const queues = stackQueues(stack)
    try {
      return await queueTestDelivery(stack, queues, other.did)
    } finally {
      await queues.close()
    }
  }
  return { receiver: r, other, url, redrive, queue }
}

test('a failed delivery never delivered, whose first attempt timed out after reaching the receiver more than 24 days ago, is not redriven: by id nor in a batch', async () => {
  // the receiver got the first attempt and never answered in time (it may have processed it); the others got a 500
  const { receiver: r, redrive, queue } = await appReceiving((_, index) => (index === 0 ? 'hang' : { status: 500, body: 'down' }))
  const id = await queue()
  const failed = await waitForStatus(stack, id, 'failed', 30_000)
  expect(failed.deliveredAt).toBeNull()
  expect(failed.firstDeliveredAt).toBeUndefined()
  const attempts = await attemptsOf(stack, id)
  expect(attempts[0]).toMatchObject({ statusCode: null, error: expect.stringMatching(/^timeout/) })
  expect(r.requests).toHaveLength(MAX_ATTEMPTS)
  // when the receiver could first have processed it: the first attempt's time
  expect(failed.firstReachedAt).toEqual(attempts[0]!.attemptedAt)

  // 31 days later, the receiver's record of the id may be gone
  await stack.events.Delivery.updateOne({ _id: id }, { $set: { firstReachedAt: new Date(Date.now() - 31 * DAY_MS) } })
  expect(await redrive({ deliveryId: id })).toEqual({ status: 200, body: { ok: true, queued: 0, reason: expect.stringMatching(/^first sent more than 24 days ago/) } })
  expect(await redrive({ status: 'failed' })).toEqual({ status: 200, body: { ok: true, queued: 0 } })
  expect(await getDelivery(stack, id)).toMatchObject({ status: 'failed', run: 1 })
  await new Promise((res) => setTimeout(res, 300))
  expect(r.requests).toHaveLength(MAX_ATTEMPTS)
})

test('a delivery held in its first run (a 410 after an attempt that timed out) ends unsent when unpaused 30 days after that first attempt', async () => {
  const { receiver: r, other, url, queue } = await appReceiving((_, index) => (index === 0 ? 'hang' : { status: 410, body: 'gone' }))
  const id = await queue()
  const held = await waitForStatus(stack, id, 'held', 30_000)
  expect(held.attempts!.map((a) => a.statusCode)).toEqual([null, 410])
  expect(held.deliveredAt).toBeNull()
  expect(held.firstReachedAt).toEqual(held.attempts![0]!.attemptedAt)
  const queues = stackQueues(stack)
  try {
    // the job knows when receivers may forget the id: 30 days after the first attempt that may have reached one
    const job = (await queues.deliveries.getJob(id))!
    expect(job.data.sendBefore).toBe(held.firstReachedAt!.getTime() + 30 * DAY_MS)
    // those 30 days pass while the endpoint is disabled
    await job.updateData({ ...job.data, sendBefore: Date.now() - 1 })
    await configureChannel(stack, other.did, { url, paused: false })
    const ended = await waitForStatus(stack, id, 'failed', 20_000)
    expect(ended.run).toBe(1)
    expect(ended.lastError).toMatch(/^not sent: first sent more than 30 days ago/)
    expect(await attemptsOf(stack, id)).toHaveLength(2)
    await new Promise((res) => setTimeout(res, 500))
    expect(r.requests).toHaveLength(2)
  } finally {
    await queues.close()
  }
})

test('a failed delivery whose every attempt was refused before it was sent (connection refused) never reached a receiver: it is redriven whenever asked', async () => {
  const { redrive, queue } = await appReceiving('closed')
  const id = await queue()
  const failed = await waitForStatus(stack, id, 'failed', 30_000)
  expect((await attemptsOf(stack, id)).map((a) => a.error)).toEqual(Array(MAX_ATTEMPTS).fill(expect.stringMatching(/^connection refused/)))
  expect(failed.firstReachedAt).toBeUndefined()
  // however old its attempts: nothing reached a receiver
  const longAgo = new Date(Date.now() - 31 * DAY_MS)
  await stack.events.Delivery.updateOne({ _id: id }, { $set: { lastAttemptAt: longAgo, failedAt: longAgo } })
  expect(await redrive({ deliveryId: id })).toEqual({ status: 200, body: { ok: true, queued: 1 } })
  await waitFor(async () => {
    const doc = await getDelivery(stack, id)
    return doc?.run === 2 && doc.status === 'failed'
  }, 'the redriven run to fail', 30_000)
  expect((await getDelivery(stack, id))!.firstReachedAt).toBeUndefined()
})

test("a test delivery within an hour of its retention's end is not redriven: the prune would delete it while its new run's job still sent it", async () => {
  const { redrive, queue } = await appReceiving('closed')
  const id = await queue()
  await waitForStatus(stack, id, 'failed', 30_000)
  // made 29 days and 23½ hours ago: the hourly prune may take it before a new run ends, even before it starts
  // (on the collection: mongoose keeps createdAt immutable)
  await stack.events.Delivery.collection.updateOne({ _id: id as never }, { $set: { createdAt: new Date(Date.now() - 30 * DAY_MS + 30 * 60_000) } })
  expect(await redrive({ deliveryId: id })).toEqual({ status: 200, body: { ok: true, queued: 0, reason: expect.stringMatching(/^a test delivery kept for 30 days and within an hour of being deleted/) } })
  expect(await redrive({ status: 'failed' })).toEqual({ status: 200, body: { ok: true, queued: 0 } })
  expect(await getDelivery(stack, id)).toMatchObject({ status: 'failed', run: 1 })
  // a day younger, it is redriven
  await stack.events.Delivery.collection.updateOne({ _id: id as never }, { $set: { createdAt: new Date(Date.now() - 29 * DAY_MS) } })
  expect(await redrive({ deliveryId: id })).toEqual({ status: 200, body: { ok: true, queued: 1 } })
})

test('a delivery deleted while its attempt is out (the test retention) gets no more attempts: nothing is sent unlogged', async () => {
  const { receiver: r, queue } = await appReceiving(async (req) => {
    await stack.events.Delivery.deleteOne({ _id: String(req.headers['webhook-id']) })
    return { status: 500, body: 'down' }
  })
  const id = await queue()
  const queues = stackQueues(stack)
  try {
    await waitFor(async () => ((await queues.deliveries.getJob(id))?.finishedOn ? true : null), 'the job to end', 30_000)
    expect(await (await queues.deliveries.getJob(id))!.getState()).toBe('completed')
  } finally {
    await queues.close()
  }
  expect(r.requests).toHaveLength(1)
})
