/**
 * POST {checkout_url}/api/webhooks/atm: redrive of one delivery (failed or delivered) or of the failed ones since a
 * time, through the real BullMQ queue. A delivery is made failed (or delivered) the way the workers leave it: its
 * document's state written and its job moved to failed (or completed) by a worker of the test. Checked: the answer,
 * the delivery's next run, the job back in `waiting` with its attempts reset, and exactly-once under parallel calls
 * (20 parallel redrives of one delivery queue it once; parallel batch redrives queue each delivery once).
 */
import type { Queue } from 'bullmq'
import type { DeliveryJob } from '@svc/events'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, readRequestLog, updateConfig } from './helpers'
import { ALL_PERMISSIONS, ATM_PATH, closeQueue, deliveriesQueue, finishDelivery, insertDelivery, jobState, listDeliveries, redrive, testEvent } from './events-helpers'

let stack: TestStack
let queue: Queue<DeliveryJob>

beforeAll(async () => {
  stack = await startStack('redrive-route', { workers: false })
  queue = deliveriesQueue(stack)
})
afterAll(async () => {
  await closeQueue(queue)
  await stack?.stop()
})

interface Dev {
  app: TestApp
  key: string
  liveKey: string
}

async function newApp(): Promise<Dev> {
  const app = await stack.newApp({ environments: ['test', 'live'] })
  expectOk(await updateConfig(stack, app, { environment: 'test', webhookUrl: 'https://93.184.216.34/hook' }))
  return { app, key: await app.apiKey('test', ALL_PERMISSIONS), liveKey: await app.apiKey('live', ALL_PERMISSIONS) }
}

/** A test delivery (route) that then failed its whole run (or was delivered). */
async function finished(dev: Dev, outcome: 'failed' | 'delivered' = 'failed'): Promise<string> {
  const { deliveryId } = expectOk(await testEvent(stack, { app: dev.app.did }, bearer(dev.key)))
  await finishDelivery(stack, queue, deliveryId, outcome)
  expect(await jobState(queue, deliveryId)).toBe(outcome === 'failed' ? 'failed' : 'completed')
  return deliveryId
}

const queuedOf = (res: { status: number; body: any }) => expectOk(res as never).queued as number

async function expectRequeued(deliveryId: string, run: number): Promise<void> {
  const doc = await stack.events.Delivery.findById(deliveryId).lean()
  expect(doc).toMatchObject({ status: 'pending', run, failedAt: null })
  expect(doc!.nextAttemptAt).toBeInstanceOf(Date)
  const job = await queue.getJob(deliveryId)
  expect(await job!.getState()).toBe('waiting')
  expect(job!.attemptsMade).toBe(0)
  // the job carries the new run: what to send, the number of its first attempt, and for a delivery that may have
  // reached a receiver before the time its attempts stop (30 days after the first attempt that may have, or the first
  // delivery)
  const firsts = [doc!.firstReachedAt, doc!.firstDeliveredAt ?? doc!.deliveredAt].filter((t): t is Date => t instanceof Date).map((t) => t.getTime())
  const sendBefore = firsts.length > 0 ? Math.min(...firsts) + 30 * 24 * 3600 * 1000 : null
  expect(job!.data).toEqual({ deliveryId, appDid: doc!.appDid, environment: doc!.environment, body: doc!.body, run, next: doc!.attemptCount + 1, firstOfRun: doc!.attemptCount + 1, inFlight: null, interrupted: [], sendBefore })
}

describe('one delivery', () => {
  it('a failed delivery is queued again: {ok, queued: 1}, next run, job waiting with attempts reset, same id', async () => {
    const dev = await newApp()
    const id = await finished(dev)
    const res = await redrive(stack, { app: dev.app.did }, { deliveryId: id }, bearer(dev.key))
    expect(expectOk(res)).toEqual({ ok: true, queued: 1 })
    await expectRequeued(id, 2)
    const listed = expectOk(await listDeliveries(stack, { app: dev.app.did }, bearer(dev.key)))
    expect(listed.deliveries.find((d: { id: string }) => d.id === id)).toMatchObject({ status: 'pending', failedAt: null })
    const log = await readRequestLog(stack, { environment: 'test', appDid: dev.app.did })
    expect(log.filter((e) => e.requestId === res.requestId).map((e) => [e.method, e.path, e.status, e.errorCode])).toEqual([['POST', ATM_PATH, 200, null]])
  })

  it('20 parallel redrives of the same failed delivery queue it exactly once', async () => {
    const dev = await newApp()
    const id = await finished(dev)
    const results = await Promise.all(Array.from({ length: 20 }, () => redrive(stack, { app: dev.app.did }, { deliveryId: id }, bearer(dev.key))))
    const queued = results.map(queuedOf)
    expect(queued.reduce((a, b) => a + b, 0)).toBe(1)
    expect(queued.filter((n) => n === 0)).toHaveLength(19)
    // each call that queued nothing says why: another took this run, or (having read it after) the run is that new one
    for (const r of results.filter((res) => queuedOf(res) === 0)) {
      expect(['another redrive of this delivery queued it', 'already queued: the delivery is pending or held and its next attempt is scheduled']).toContain(r.body.reason)
    }
    await expectRequeued(id, 2)
    const waiting = await queue.getJobs(['waiting'])
    expect(waiting.filter((j) => j.id === id)).toHaveLength(1)
    expect(await queue.getJobs(['failed', 'completed', 'delayed', 'active']).then((jobs) => jobs.filter((j) => j.id === id))).toHaveLength(0)
  })

  it('a pending (already queued) or held delivery is not queued again: queued 0, nothing changes', async () => {
    const dev = await newApp()
    const { deliveryId } = expectOk(await testEvent(stack, { app: dev.app.did }, bearer(dev.key)))
    // a redrive of one delivery that queues nothing says why
    const alreadyQueued = { ok: true, queued: 0, reason: 'already queued: the delivery is pending or held and its next attempt is scheduled' }
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { deliveryId }, bearer(dev.key)))).toEqual(alreadyQueued)
    expect(await stack.events.Delivery.findById(deliveryId).lean()).toMatchObject({ status: 'pending', run: 1 })
    expect(await jobState(queue, deliveryId)).toBe('waiting')
    await stack.events.Delivery.updateOne({ _id: deliveryId }, { $set: { status: 'held' } })
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { deliveryId }, bearer(dev.key)))).toEqual(alreadyQueued)
    expect(await stack.events.Delivery.findById(deliveryId).lean()).toMatchObject({ status: 'held', run: 1 })
  })

  it('a pending delivery whose job Redis lost is queued again, where its run stands: queued 1, then 0 while the job exists (also under 10 parallel calls)', async () => {
    const dev = await newApp()
    const { deliveryId } = expectOk(await testEvent(stack, { app: dev.app.did }, bearer(dev.key)))
    await (await queue.getJob(deliveryId))!.remove()
    const results = await Promise.all(Array.from({ length: 10 }, () => redrive(stack, { app: dev.app.did }, { deliveryId }, bearer(dev.key))))
    expect(results.map(queuedOf).reduce((a, b) => a + b, 0)).toBe(1)
    expect(await stack.events.Delivery.findById(deliveryId).lean()).toMatchObject({ status: 'pending', run: 1 })
    const job = await queue.getJob(deliveryId)
    expect(await job!.getState()).toBe('waiting')
    expect(job!.data).toMatchObject({ deliveryId, run: 1, next: 1 })
    expect(queuedOf(await redrive(stack, { app: dev.app.did }, { deliveryId }, bearer(dev.key)))).toBe(0)
  })

  it('a redriven delivery that failed again can be redriven again (a new run, a new claim), once the first settled', async () => {
    const dev = await newApp()
    const id = await finished(dev)
    expect(queuedOf(await redrive(stack, { app: dev.app.did }, { deliveryId: id }, bearer(dev.key)))).toBe(1)
    expect(queuedOf(await redrive(stack, { app: dev.app.did }, { deliveryId: id }, bearer(dev.key)))).toBe(0)
    await finishDelivery(stack, queue, id, 'failed')
    // its new run already ended, but the redrive was moments ago: a parallel or repeated call queues nothing
    expect(queuedOf(await redrive(stack, { app: dev.app.did }, { deliveryId: id }, bearer(dev.key)))).toBe(0)
    expect(await jobState(queue, id)).toBe('failed')
    // ten seconds later (the first claim's time moved back) it is redriven again
    await stack.redis.set(`${stack.redisPrefix}redrive:${id}:1`, String(Date.now() - 11_000), 'KEEPTTL')
    expect(queuedOf(await redrive(stack, { app: dev.app.did }, { deliveryId: id }, bearer(dev.key)))).toBe(1)
    await expectRequeued(id, 3)
  })

  it('a delivered delivery is sent again (its completed job retried)', async () => {
    const dev = await newApp()
    const id = await finished(dev, 'delivered')
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { deliveryId: id }, bearer(dev.key)))).toEqual({ ok: true, queued: 1 })
    await expectRequeued(id, 2)
  })

  it('a delivery first delivered more than 24 days ago is not sent again (receivers keep processed ids 30 days, a run may take 3 or more); one of 23 days is', async () => {
    const dev = await newApp()
    const old = await finished(dev, 'delivered')
    const recent = await finished(dev, 'delivered')
    // delivered long ago, then redriven into a run that failed: delivered all the same
    const redrivenAndFailed = await finished(dev, 'failed')
    // delivered long ago, then redriven into a run that delivered again yesterday (the receiver answered a duplicate)
    const redrivenAndDelivered = await finished(dev, 'delivered')
    const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 3600 * 1000)
    await stack.events.Delivery.updateOne({ _id: old }, { $set: { deliveredAt: daysAgo(25), firstDeliveredAt: daysAgo(25) } })
    await stack.events.Delivery.updateOne({ _id: recent }, { $set: { deliveredAt: daysAgo(23), firstDeliveredAt: daysAgo(23) } })
    await stack.events.Delivery.updateOne({ _id: redrivenAndFailed }, { $set: { deliveredAt: daysAgo(25), firstDeliveredAt: daysAgo(25), run: 2 } })
    await stack.events.Delivery.updateOne({ _id: redrivenAndDelivered }, { $set: { deliveredAt: daysAgo(1), firstDeliveredAt: daysAgo(25), run: 2 } })
    const tooOld = { ok: true, queued: 0, reason: expect.stringMatching(/^first sent more than 24 days ago/) }
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { deliveryId: old }, bearer(dev.key)))).toEqual(tooOld)
    expect(await stack.events.Delivery.findById(old).lean()).toMatchObject({ status: 'delivered', run: 1 })
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { deliveryId: redrivenAndFailed }, bearer(dev.key)))).toEqual(tooOld)
    expect(await stack.events.Delivery.findById(redrivenAndFailed).lean()).toMatchObject({ status: 'failed', run: 2 })
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { deliveryId: redrivenAndDelivered }, bearer(dev.key)))).toEqual(tooOld)
    expect(await stack.events.Delivery.findById(redrivenAndDelivered).lean()).toMatchObject({ status: 'delivered', run: 2 })
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { deliveryId: recent }, bearer(dev.key)))).toEqual({ ok: true, queued: 1 })
    await expectRequeued(recent, 2)
  })

  it('a failed delivery never delivered whose first attempt may have reached its receiver (timed out, a 5xx) more than 24 days ago is not sent again; one of 23 days is', async () => {
    const dev = await newApp()
    const old = await finished(dev)
    const recent = await finished(dev)
    // first delivered before firstReachedAt was recorded, 25 days ago; an attempt of a later run reached it yesterday
    const deliveredBefore = await finished(dev, 'delivered')
    const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 3600 * 1000)
    await stack.events.Delivery.updateOne({ _id: old }, { $set: { firstReachedAt: daysAgo(31) } })
    await stack.events.Delivery.updateOne({ _id: recent }, { $set: { firstReachedAt: daysAgo(23) } })
    await stack.events.Delivery.updateOne({ _id: deliveredBefore }, { $set: { deliveredAt: daysAgo(25), firstDeliveredAt: daysAgo(25), firstReachedAt: daysAgo(1) } })
    const tooOld = { ok: true, queued: 0, reason: expect.stringMatching(/^first sent more than 24 days ago/) }
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { deliveryId: old }, bearer(dev.key)))).toEqual(tooOld)
    expect(await stack.events.Delivery.findById(old).lean()).toMatchObject({ status: 'failed', run: 1 })
    expect(await jobState(queue, old)).toBe('failed')
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { deliveryId: deliveredBefore }, bearer(dev.key)))).toEqual(tooOld)
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { deliveryId: recent }, bearer(dev.key)))).toEqual({ ok: true, queued: 1 })
    await expectRequeued(recent, 2)
  })

  it('a failed delivery whose job is gone gets a new job', async () => {
    const dev = await newApp()
    const id = await finished(dev)
    await (await queue.getJob(id))!.remove()
    expect(await jobState(queue, id)).toBe('missing')
    expect(queuedOf(await redrive(stack, { app: dev.app.did }, { deliveryId: id }, bearer(dev.key)))).toBe(1)
    await expectRequeued(id, 2)
  })

  it("a failed delivery whose old run's job is not finished (a retry BullMQ delayed after the run's last outcome) gets a new job, not that one", async () => {
    const dev = await newApp()
    const id = await finished(dev)
    const old = (await queue.getJob(id))!
    await old.remove()
    await queue.add(old.name, old.data, { jobId: id, delay: 3600_000 })
    expect(await jobState(queue, id)).toBe('delayed')
    expect(queuedOf(await redrive(stack, { app: dev.app.did }, { deliveryId: id }, bearer(dev.key)))).toBe(1)
    // before, the old job was kept with the new run's data: still delayed an hour, its attempts counted on
    await expectRequeued(id, 2)
  })

  it('a live key redrives its live delivery; a test key cannot reach it', async () => {
    const dev = await newApp()
    const id = await insertDelivery(stack, { appDid: dev.app.did, environment: 'live', status: 'failed' })
    expectError(await redrive(stack, { app: dev.app.did }, { deliveryId: id }, bearer(dev.key)), 404, 'DeliveryNotFound')
    expect(queuedOf(await redrive(stack, { app: dev.app.did }, { deliveryId: id }, bearer(dev.liveKey)))).toBe(1)
    expect(await jobState(queue, id)).toBe('waiting')
    expect(await stack.events.Delivery.findById(id).lean()).toMatchObject({ status: 'pending', run: 2 })
  })
})

describe('404 DeliveryNotFound', () => {
  it('an unknown id, a malformed id, or the id of another app is not found, and nothing changes', async () => {
    const dev = await newApp()
    const other = await newApp()
    const othersFailed = await finished(other)
    for (const deliveryId of [`whd_${'0'.repeat(32)}`, 'whd_nope', '', othersFailed]) {
      const res = await redrive(stack, { app: dev.app.did }, { deliveryId }, bearer(dev.key))
      expectError(res, 404, 'DeliveryNotFound')
      expect(res.text).not.toContain(other.app.did)
    }
    expect(await stack.events.Delivery.findById(othersFailed).lean()).toMatchObject({ status: 'failed', run: 1 })
    expect(await jobState(queue, othersFailed)).toBe('failed')
    const log = await readRequestLog(stack, { environment: 'test', appDid: dev.app.did })
    expect(log.filter((e) => e.errorCode === 'DeliveryNotFound').length).toBeGreaterThanOrEqual(4)
  })
})

describe('batch: {"status": "failed", "since"?, "limit"?}', () => {
  it('queues every failed delivery of the app environment, oldest first, and nothing else', async () => {
    const dev = await newApp()
    const failed = [await finished(dev), await finished(dev), await finished(dev)]
    const delivered = await finished(dev, 'delivered')
    const { deliveryId: pending } = expectOk(await testEvent(stack, { app: dev.app.did }, bearer(dev.key)))
    const other = await newApp()
    const othersFailed = await finished(other)
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { status: 'failed' }, bearer(dev.key)))).toEqual({ ok: true, queued: 3 })
    for (const id of failed) await expectRequeued(id, 2)
    expect(await stack.events.Delivery.findById(delivered).lean()).toMatchObject({ status: 'delivered', run: 1 })
    expect(await stack.events.Delivery.findById(pending).lean()).toMatchObject({ status: 'pending', run: 1 })
    expect(await stack.events.Delivery.findById(othersFailed).lean()).toMatchObject({ status: 'failed', run: 1 })
    expect(await jobState(queue, othersFailed)).toBe('failed')
    // nothing failed is left
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { status: 'failed' }, bearer(dev.key)))).toEqual({ ok: true, queued: 0 })
  })

  it('leaves out the failed deliveries first delivered too long ago, so they do not take the places of newer ones', async () => {
    const dev = await newApp()
    const tooOld = [await finished(dev), await finished(dev), await finished(dev)]
    const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 3600 * 1000)
    for (const id of tooOld) await stack.events.Delivery.updateOne({ _id: id }, { $set: { deliveredAt: daysAgo(25), firstDeliveredAt: daysAgo(25), run: 2 } })
    const newer = await finished(dev)
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { status: 'failed', limit: 3 }, bearer(dev.key)))).toEqual({ ok: true, queued: 1 })
    await expectRequeued(newer, 2)
    for (const id of tooOld) expect(await stack.events.Delivery.findById(id).lean()).toMatchObject({ status: 'failed', run: 2 })
  })

  it('leaves out the failed deliveries never delivered whose first attempt may have reached the receiver too long ago', async () => {
    const dev = await newApp()
    const tooOld = [await finished(dev), await finished(dev), await finished(dev)]
    const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 3600 * 1000)
    for (const id of tooOld) await stack.events.Delivery.updateOne({ _id: id }, { $set: { firstReachedAt: daysAgo(31) } })
    const reachedLately = await finished(dev)
    await stack.events.Delivery.updateOne({ _id: reachedLately }, { $set: { firstReachedAt: daysAgo(1) } })
    const neverReached = await finished(dev)
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { status: 'failed', limit: 3 }, bearer(dev.key)))).toEqual({ ok: true, queued: 2 })
    await expectRequeued(reachedLately, 2)
    await expectRequeued(neverReached, 2)
    for (const id of tooOld) expect(await stack.events.Delivery.findById(id).lean()).toMatchObject({ status: 'failed', run: 1 })
  })

  it('parallel batch redrives queue each failed delivery exactly once in total', async () => {
    const dev = await newApp()
    const failed: string[] = []
    for (let i = 0; i < 6; i++) failed.push(await finished(dev))
    const results = await Promise.all(Array.from({ length: 10 }, () => redrive(stack, { app: dev.app.did }, { status: 'failed' }, bearer(dev.key))))
    expect(results.map(queuedOf).reduce((a, b) => a + b, 0)).toBe(6)
    for (const id of failed) await expectRequeued(id, 2)
    const waiting = (await queue.getJobs(['waiting'])).filter((j) => failed.includes(j.id!))
    expect(waiting).toHaveLength(6)
  })

  it('since keeps those created at or after it; limit takes the oldest first', async () => {
    const dev = await newApp()
    const failed: string[] = []
    for (let i = 0; i < 5; i++) failed.push(await finished(dev))
    // two days ago, on the hour (a test delivery near its 30 days' end is not redriven)
    const base = Math.floor((Date.now() - 2 * 86_400_000) / 3600_000) * 3600_000
    for (const [i, id] of failed.entries()) {
      await stack.events.Delivery.collection.updateOne({ _id: id as never }, { $set: { createdAt: new Date(base + i * 3600_000) } })
    }
    // since the third (inclusive), at most one: the third
    const since = new Date(base + 2 * 3600_000).toISOString()
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { status: 'failed', since, limit: 1 }, bearer(dev.key)))).toEqual({ ok: true, queued: 1 })
    expect((await stack.events.Delivery.find({ _id: { $in: failed } }).lean()).filter((d) => d.status === 'pending').map((d) => d._id)).toEqual([failed[2]])
    // a zone offset is accepted: since the fourth, written as the time at +01:00
    const fourthAtPlusOne = new Date(base + 4 * 3600_000).toISOString().replace('.000Z', '+01:00')
    expect(queuedOf(await redrive(stack, { app: dev.app.did }, { status: 'failed', since: fourthAtPlusOne }, bearer(dev.key)))).toBe(2)
    // the rest, with no since
    expect(queuedOf(await redrive(stack, { app: dev.app.did }, { status: 'failed', limit: 1000 }, bearer(dev.key)))).toBe(2)
    for (const id of failed) await expectRequeued(id, 2)
  })
})

describe('400 InvalidRequest bodies change nothing', () => {
  let dev: Dev
  let failedId: string
  beforeAll(async () => {
    dev = await newApp()
    failedId = await finished(dev)
  })

  it.each<[string, unknown, string | null]>([
    ['no body', undefined, null],
    ['an empty body', '', 'application/json'],
    ['not JSON', '{"deliveryId": ', 'application/json'],
    ['a JSON array', '[]', 'application/json'],
    ['a JSON string', '"whd_x"', 'application/json'],
    ['null', 'null', 'application/json'],
    ['an empty object', {}, 'application/json'],
    ['both fields', { deliveryId: 'whd_x', status: 'failed' }, 'application/json'],
    ['an unknown field', { status: 'failed', app: 'did:key:zOther' }, 'application/json'],
    ['an unknown field beside deliveryId', { deliveryId: 'whd_x', environment: 'live' }, 'application/json'],
    ['deliveryId not a string', { deliveryId: 42 }, 'application/json'],
    ['status not failed', { status: 'delivered' }, 'application/json'],
    ['status pending', { status: 'pending' }, 'application/json'],
    ['status not a string', { status: true }, 'application/json'],
    ['since not ISO', { status: 'failed', since: 'yesterday' }, 'application/json'],
    ['since without a zone', { status: 'failed', since: '2026-01-01T00:00:00' }, 'application/json'],
    ['since not a date', { status: 'failed', since: '2026-13-45T00:00:00Z' }, 'application/json'],
    ['since a day the month lacks', { status: 'failed', since: '2026-02-30T00:00:00Z' }, 'application/json'],
    ['since hour 24', { status: 'failed', since: '2026-01-01T24:00:00Z' }, 'application/json'],
    ['since a number', { status: 'failed', since: 1767225600000 }, 'application/json'],
    ['limit 0', { status: 'failed', limit: 0 }, 'application/json'],
    ['limit 1001', { status: 'failed', limit: 1001 }, 'application/json'],
    ['limit 1.5', { status: 'failed', limit: 1.5 }, 'application/json'],
    ['limit a string', { status: 'failed', limit: '10' }, 'application/json'],
    ['limit huge', { status: 'failed', limit: 1e20 }, 'application/json'],
    ['limit with deliveryId', { deliveryId: 'whd_x', limit: 1 }, 'application/json'],
    ['since with deliveryId', { deliveryId: 'whd_x', since: '2026-01-01T00:00:00Z' }, 'application/json'],
    ['form encoded', 'deliveryId=whd_x', 'application/x-www-form-urlencoded'],
  ])('%s', async (_label, body, contentType) => {
    const res = await redrive(stack, { app: dev.app.did }, body, bearer(dev.key), contentType)
    expectError(res, 400, 'InvalidRequest')
    expect(await stack.events.Delivery.findById(failedId).lean()).toMatchObject({ status: 'failed', run: 1 })
    expect(await jobState(queue, failedId)).toBe('failed')
  })

  it('null fields count as absent', async () => {
    expect(expectOk(await redrive(stack, { app: dev.app.did }, { deliveryId: null, status: 'failed', since: null, limit: null }, bearer(dev.key)))).toEqual({ ok: true, queued: 1 })
    await expectRequeued(failedId, 2)
  })

  it('a body over 256 KiB is 413 PayloadTooLarge', async () => {
    const res = await redrive(stack, { app: dev.app.did }, { deliveryId: `whd_${'a'.repeat(300 * 1024)}` }, bearer(dev.key))
    expectError(res, 413, 'PayloadTooLarge')
  })
})
