/**
 * The outbox relay against the test FerretDB and Redis with real BullMQ queues: every event reaches `domain-events`
 * once (job id = event id), is marked relayed only after it is on the queue, and a crash in between neither loses
 * nor doubles it. Each test has its own Redis prefix (its own queue) and starts with an empty outbox.
 */
import { Queue } from 'bullmq'
import Redis from 'ioredis'
import mongoose, { type Connection } from 'mongoose'
import pino from 'pino'
import type { EventType } from '@svc/vocabulary'
import { createMetrics } from '@svc/operations'
import { isolate } from '@svc/testing/src/isolation'
import {
  createOutboxModel,
  DOMAIN_EVENTS_QUEUE,
  outboxEventId,
  queuePrefix,
  relayAliveKey,
  startOutboxRelay,
  writeOutboxEvent,
  writeOutboxEvents,
  type DomainEventJob,
  type OutboxModel,
  type OutboxRelay,
  type OutboxRelayOptions,
} from '../src'

const iso = isolate('outbox_relay')
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })
const APP = 'did:web:relay-app.example.com'
let conn: Connection
let model: OutboxModel
let redis: Redis
let testNo = 0
const relays: OutboxRelay[] = []
const queues: Queue[] = []

beforeAll(async () => {
  conn = await mongoose.createConnection(iso.mongoUrl, { serverSelectionTimeoutMS: 10000 }).asPromise()
  model = await createOutboxModel(conn, 'payments')
  redis = new Redis(iso.redisUrl, { maxRetriesPerRequest: null })
})

afterEach(async () => {
  await Promise.all(relays.splice(0).map((r) => r.stop()))
  await Promise.all(queues.splice(0).map((q) => q.close()))
  await model.deleteMany({})
})

afterAll(async () => {
  await conn?.dropDatabase().catch(() => undefined)
  await conn?.close()
  const keys = await redis.keys(`${iso.redisPrefix}*`)
  if (keys.length) await redis.del(...keys)
  redis.disconnect()
})

/** A queue of this test's own (its own Redis prefix) and relays publishing to it. */
function fixture() {
  const redisPrefix = `${iso.redisPrefix}${++testNo}:`
  const queue = new Queue<DomainEventJob>(DOMAIN_EVENTS_QUEUE, { connection: redis, prefix: queuePrefix(redisPrefix) })
  queues.push(queue)
  const relay = (o: Partial<OutboxRelayOptions> = {}) => {
    // polling every minute unless a test says otherwise: only wake-ups (or drain) move events in these tests
    const r = startOutboxRelay({ model, source: 'payments', redisUrl: iso.redisUrl, redisPrefix, logger, intervalMs: 60_000, ...o })
    relays.push(r)
    return r
  }
  const jobCount = async () => Object.values(await queue.getJobCounts()).reduce((a, b) => a + b, 0)
  return { queue, relay, jobCount, redisPrefix }
}

/**
 * Waits for the passes already asked for. An event written while the first scan runs is relayed by that scan and
 * then again (a no-op on a healthy Redis) by the pass its write woke: a test that empties Redis once the event is
 * marked must let that pass finish first, or it publishes the job again after the wipe.
 */
const settled = async (r: OutboxRelay) => expect(await r.drain()).toBe(0)

const event = (key: string, o: { type?: EventType; occurredAt?: Date; environment?: 'test' | 'live' } = {}) => ({
  type: o.type ?? 'payment.completed',
  environment: o.environment ?? ('test' as const),
  appDid: APP,
  data: { key, amount: 1200, nested: { currency: 'usd' } },
  key,
  occurredAt: o.occurredAt,
})

async function waitFor(check: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

const unrelayed = () => model.countDocuments({ relayedAt: null })
const allRelayed = async () => (await unrelayed()) === 0

test('a written event is on domain-events at once (woken by the write, not the poll), once, with the event id as job id, then marked relayed', async () => {
  const { queue, relay, jobCount } = fixture()
  relay()
  const occurredAt = new Date('2026-06-01T12:00:00.000Z')
  const ids = [
    await writeOutboxEvent(model, event('payment.completed:chk_1', { occurredAt })),
    await writeOutboxEvent(model, event('app.authorization.granted:apr_1:1', { type: 'app.authorization.granted', environment: 'live' })),
  ]
  // relayed within waitFor's 5 s while the poll is a minute away: the writes themselves woke the relay
  await waitFor(allRelayed)
  expect(await jobCount()).toBe(2)

  const job = await queue.getJob(ids[0]!)
  expect(job?.id).toBe(outboxEventId('payment.completed:chk_1'))
  expect(job?.name).toBe('payment.completed')
  expect(job?.data).toEqual({
    eventId: ids[0],
    source: 'payments',
    type: 'payment.completed',
    environment: 'test',
    appDid: APP,
    data: { key: 'payment.completed:chk_1', amount: 1200, nested: { currency: 'usd' } },
    occurredAt: '2026-06-01T12:00:00.000Z',
  })
  expect(job?.opts).toMatchObject({ attempts: 10, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: { age: 7 * 24 * 3600, count: 100_000 }, removeOnFail: false })
  const granted = await queue.getJob(ids[1]!)
  expect(granted?.name).toBe('app.authorization.granted')
  expect(granted?.data).toMatchObject({ eventId: ids[1], environment: 'live', type: 'app.authorization.granted' })

  // marked only after the add: the job existed before relayedAt was set
  const doc = await model.findById(ids[0]).lean()
  expect(doc?.relayedAt).toBeInstanceOf(Date)
  expect(job!.timestamp).toBeLessThanOrEqual(doc!.relayedAt!.getTime())
})

test('polling relays writes it was not told about (another process), oldest first, batch by batch', async () => {
  const { queue, relay, jobCount } = fixture()
  const base = Date.parse('2026-06-01T00:00:00Z')
  // written straight to the collection (as another process would: no wake-up here), newest first; as a writer of the
  // earlier version wrote them, without `relayed` (the relay's start gives it to them)
  const docs = [4, 3, 2, 1, 0].map((i) => ({
    _id: outboxEventId(`raw:${i}`),
    type: 'payment.completed',
    environment: 'test',
    appDid: APP,
    data: { i },
    key: `raw:${i}`,
    occurredAt: new Date(base + i * 1000),
    relayedAt: null,
  }))
  await model.collection.insertMany(docs as never[])
  const order: string[] = []
  relay({ intervalMs: 100, batchSize: 2, beforeMark: (ids) => void order.push(...ids) })
  await waitFor(allRelayed)
  expect(order).toEqual([0, 1, 2, 3, 4].map((i) => outboxEventId(`raw:${i}`)))
  expect(await jobCount()).toBe(5)
  expect((await queue.getJob(outboxEventId('raw:3')))?.data.occurredAt).toBe(new Date(base + 3000).toISOString())
})

/** An outbox document as another process's write leaves it (no wake-up here). */
const rawEvent = (key: string, i: number, occurredAt: Date) => ({
  _id: outboxEventId(key),
  type: 'payment.completed',
  environment: 'test',
  appDid: APP,
  data: { i },
  key,
  occurredAt,
  relayed: false,
  relayedAt: null,
})

test('two relays of one domain (two processes) polling one outbox at once: every event on the queue once, none added again', async () => {
  const { queue, relay, jobCount } = fixture()
  const base = Date.parse('2026-06-01T00:00:00Z')
  // written straight to the collection (another process's writes: no wake-up), so both relays find them by scanning
  await model.collection.insertMany(Array.from({ length: 120 }, (_, i) => rawEvent(`two:${i}`, i, new Date(base + i * 1000))) as never[])
  relay({ intervalMs: 50, batchSize: 10 })
  relay({ intervalMs: 50, batchSize: 10 })
  await waitFor(allRelayed, 15_000)
  const jobs = await queue.getJobs(['wait', 'delayed', 'prioritized'], 0, 1000)
  expect(new Set(jobs.map((j) => j.id)).size).toBe(120)
  expect(await jobCount()).toBe(120)
  // more passes of both change nothing: each job is the one first added
  const added = new Map(jobs.map((j) => [j.id, j.timestamp]))
  await Promise.all(relays.map((r) => r.drain()))
  for (const j of await queue.getJobs(['wait', 'delayed', 'prioritized'], 0, 1000)) expect(j.timestamp).toBe(added.get(j.id))
  expect(await jobCount()).toBe(120)
})

test('a backlog is named once per scan, not once per batch (FerretDB decodes the whole unrelayed set for each such query)', async () => {
  const { relay, jobCount } = fixture()
  const base = Date.parse('2026-06-01T00:00:00Z')
  const docs = Array.from({ length: 25 }, (_, i) => rawEvent(`backlog:${i}`, i, new Date(base + (24 - i) * 1000)))
  await model.collection.insertMany(docs as never[])
  const order: string[] = []
  const r = relay({ batchSize: 5, beforeMark: (ids) => void order.push(...ids) })
  await r.drain()
  const find = jest.spyOn(model, 'find')
  try {
    await model.updateMany({}, { $set: { relayed: false } })
    await r.drain()
    // one query by `relayed: false` for five batches
    expect(find.mock.calls.filter(([filter]) => (filter as { relayed?: unknown })?.relayed === false)).toHaveLength(1)
  } finally {
    find.mockRestore()
  }
  expect(await jobCount()).toBe(25)
  expect(await unrelayed()).toBe(0)
  // oldest first, each batch in order
  expect(order.slice(0, 25)).toEqual(docs.map((d) => d._id).reverse())
})

test("this process's writes are relayed by their ids, not by a scan: an unannounced event waits for the next poll", async () => {
  const { relay, jobCount } = fixture()
  const r = relay() // polls every minute: only the start scans
  expect(await r.drain()).toBe(0) // runs after the start's scan
  const raw = { _id: outboxEventId('raw:unannounced'), ...event('raw:unannounced'), occurredAt: new Date(Date.now() - 1000), relayed: false, relayedAt: null }
  await model.collection.insertOne(raw as never)
  const id = await writeOutboxEvent(model, event('payment.completed:announced'))
  await waitFor(async () => (await model.findById(id).lean())?.relayedAt instanceof Date)
  expect((await model.findById(raw._id).lean())?.relayedAt).toBeNull()
  expect(await jobCount()).toBe(1)
  // the next scan relays it
  expect(await r.drain()).toBe(1)
  expect(await jobCount()).toBe(2)
})

test('a pass that fails after publishing and before marking is retried at the next pass: the same job, then marked', async () => {
  const { queue, relay, jobCount } = fixture()
  const marks: string[][] = []
  relay({
    intervalMs: 100,
    beforeMark: (ids) => {
      marks.push(ids)
      if (marks.length === 1) throw new Error('simulated crash between publishing and marking')
    },
  })
  const id = await writeOutboxEvent(model, event('payment.completed:chk_retry'))
  await waitFor(allRelayed)
  // published twice (the failed pass and its retry), one job
  expect(marks).toEqual([[id], [id]])
  expect(await jobCount()).toBe(1)
  expect((await queue.getJob(id))?.data.eventId).toBe(id)
})

test('a relay that dies after publishing and before marking: the next relay publishes again, which is a no-op by job id', async () => {
  const { queue, relay, jobCount } = fixture()
  const dying = relay({
    beforeMark: () => {
      throw new Error('the process died here')
    },
  })
  const ids = [await writeOutboxEvent(model, event('payment.completed:chk_a')), await writeOutboxEvent(model, event('payment.completed:chk_b'))]
  // the writes woke it: it publishes and "dies" before marking (an error, logged; a drain reports it)
  await waitFor(async () => (await jobCount()) === 2)
  await expect(dying.drain()).rejects.toThrow('the process died here')
  await dying.stop()
  expect(await unrelayed()).toBe(2)
  const firstJob = await queue.getJob(ids[0]!)

  // the next relay (another process start) publishes both again as it starts, then marks them
  const republished: string[] = []
  const next = relay({ beforeMark: (batch) => void republished.push(...batch) })
  await waitFor(allRelayed)
  expect(republished.sort()).toEqual([...ids].sort())
  expect(await jobCount()).toBe(2)
  // the very same job: re-adding an existing job id changed nothing
  const again = await queue.getJob(ids[0]!)
  expect(again?.timestamp).toBe(firstJob?.timestamp)
  expect(again?.data).toEqual(firstJob?.data)
  expect(await next.drain()).toBe(0)
})

test('writes during a pass are relayed by the next one, each once; a burst of writes across several batches loses and doubles nothing', async () => {
  const { queue, relay, jobCount } = fixture()
  let duringPass: Promise<string[]> | null = null
  relay({
    batchSize: 25,
    beforeMark: async () => {
      // while the first pass is between publishing and marking, 20 more events are written
      if (!duringPass) {
        duringPass = Promise.all(Array.from({ length: 20 }, (_, i) => writeOutboxEvent(model, event(`during:${i}`))))
        await duringPass
      }
    },
  })
  const first = await writeOutboxEvent(model, event('before'))
  await waitFor(async () => duringPass !== null)
  const during = await duringPass!
  await waitFor(allRelayed)
  expect(await jobCount()).toBe(21)
  for (const id of [first, ...during]) expect((await queue.getJob(id))?.data.eventId).toBe(id)

  const burst = await Promise.all(Array.from({ length: 200 }, (_, i) => writeOutboxEvent(model, event(`burst:${i}`))))
  await waitFor(allRelayed, 15_000)
  expect(await model.countDocuments({})).toBe(221)
  expect(await jobCount()).toBe(221)
  const jobIds = new Set((await queue.getJobs(['wait', 'delayed', 'prioritized'], 0, 1000)).map((j) => j.id))
  expect(jobIds.size).toBe(221)
  for (const id of burst) expect(jobIds.has(id)).toBe(true)
})

test('50 parallel writes of the same fact: one event, one job', async () => {
  const { queue, relay, jobCount } = fixture()
  const r = relay()
  const ids = await Promise.all(Array.from({ length: 50 }, () => writeOutboxEvent(model, event('payment.completed:chk_same'))))
  expect(new Set(ids)).toEqual(new Set([outboxEventId('payment.completed:chk_same')]))
  expect(await model.countDocuments({})).toBe(1)
  await waitFor(allRelayed)
  expect(await r.drain()).toBe(0)
  expect(await jobCount()).toBe(1)
  expect((await queue.getJob(ids[0]!))?.name).toBe('payment.completed')
})

/** A relay whose passes each wait 300 ms before marking; `inPass` resolves when the first one does. */
function slowToMark(relay: ReturnType<typeof fixture>['relay']): { r: OutboxRelay; inPass: Promise<void> } {
  let entered!: () => void
  const inPass = new Promise<void>((resolve) => (entered = resolve))
  const r = relay({
    beforeMark: async () => {
      entered()
      await new Promise((resolve) => setTimeout(resolve, 300))
    },
  })
  return { r, inPass }
}

test('stop() lets the running pass finish (its events are marked), and a stopped relay relays nothing more', async () => {
  const { relay, jobCount } = fixture()
  const { r, inPass } = slowToMark(relay)
  const id = await writeOutboxEvent(model, event('payment.completed:chk_stop'))
  await inPass
  await r.stop()
  expect((await model.findById(id).lean())?.relayedAt).toBeInstanceOf(Date)

  await writeOutboxEvent(model, event('payment.completed:after_stop'))
  await new Promise((resolve) => setTimeout(resolve, 300))
  expect(await unrelayed()).toBe(1)
  expect(await jobCount()).toBe(1)
})

test('stop() publishes the events handed to it while a pass ran (a request that finished during the drain), not at the next start', async () => {
  const { relay, jobCount } = fixture()
  const { r, inPass } = slowToMark(relay)
  await writeOutboxEvent(model, event('payment.completed:chk_before_drain'))
  await inPass
  // written while the pass is busy: its wake-up waits behind the pass, and stop() comes first
  await writeOutboxEvent(model, event('payment.completed:chk_during_drain'))
  await r.stop()
  expect(await unrelayed()).toBe(0)
  expect(await jobCount()).toBe(2)
})

test('Redis unreachable: a pass fails (the events stay unrelayed, for the next pass) and stop() still returns at once', async () => {
  const lines: { msg?: string; err?: { message?: string } }[] = []
  const captured = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) })
  const unreachable = startOutboxRelay({ model, source: 'apps', redisUrl: 'redis://127.0.0.1:1', redisPrefix: `${iso.redisPrefix}down:`, logger: captured, intervalMs: 100 })
  await writeOutboxEvent(model, event('app.authorization.granted:apr_down:1', { type: 'app.authorization.granted' }))
  await expect(unreachable.drain()).rejects.toThrow(/ECONNREFUSED|connecting to Redis/)
  expect(await unrelayed()).toBe(1)
  // returns though Redis never comes back (a stop that waited for it would end the test by its timeout)
  await unreachable.stop()
  expect(lines.some((l) => l.msg === 'outbox relay pass failed; retrying at the next pass')).toBe(true)
})

test('Redis loses its data: the next scan relays again the events relayed within the replay window (older ones stay), each once', async () => {
  const { queue, relay, jobCount, redisPrefix } = fixture()
  const r = relay()
  const ids = [await writeOutboxEvent(model, event('lost:1')), await writeOutboxEvent(model, event('lost:2'))]
  await waitFor(allRelayed)
  await settled(r)
  expect(await jobCount()).toBe(2)
  // relayed three days ago, long processed: outside the default window of 24 h
  const threeDaysAgo = new Date(Date.now() - 3 * 24 * 3600_000)
  await model.collection.insertOne({ _id: outboxEventId('old'), ...event('old'), occurredAt: threeDaysAgo, relayed: true, relayedAt: threeDaysAgo } as never)

  // a Redis restart without persistence: the queued domain events are gone, and the relay's key with them
  const keys = await redis.keys(`${redisPrefix}*`)
  await redis.del(...keys)
  expect(await jobCount()).toBe(0)

  expect(await r.drain()).toBe(2)
  expect(await jobCount()).toBe(2)
  for (const id of ids) expect((await queue.getJob(id))?.data.eventId).toBe(id)
  expect(await unrelayed()).toBe(0)
  // Redis kept its data since: nothing is relayed again
  expect(await r.drain()).toBe(0)
  expect(await jobCount()).toBe(2)
  expect((await model.findById(outboxEventId('old')).lean())?.relayedAt).toEqual(threeDaysAgo)
})

test('Redis loses its data and the database fails the replay: the replay happens at the retry, not never', async () => {
  const { queue, relay, jobCount, redisPrefix } = fixture()
  const r = relay()
  const id = await writeOutboxEvent(model, event('lost:replay-fails'))
  await waitFor(allRelayed)
  await settled(r)
  await redis.del(...(await redis.keys(`${redisPrefix}*`)))
  // the database is away for the replay's write (Redis came back first)
  const away = jest.spyOn(model, 'updateMany').mockImplementationOnce(() => Promise.reject(new Error('connection closed')) as never)
  try {
    await expect(r.drain()).rejects.toThrow('connection closed')
  } finally {
    away.mockRestore()
  }
  expect(await jobCount()).toBe(0)
  expect(await r.drain()).toBe(1)
  expect((await queue.getJob(id))?.data.eventId).toBe(id)
})

/** The relay keys of a domain (its marker, each relay's count), as a replica of Redis would hold them now. */
async function relayKeys(redisPrefix: string): Promise<Map<string, string>> {
  const marker = relayAliveKey(redisPrefix, 'payments')
  const keys = [marker, ...(await redis.keys(`${marker}:relay:*`))]
  const values = await redis.mget(...keys)
  return new Map(keys.flatMap((k, i) => (values[i] === null ? [] : [[k, values[i]!] as [string, string]])))
}

/** Redis fails over to a replica that held `replica` of the relay keys (and not the jobs published since). */
async function failOverTo(redisPrefix: string, replica: Map<string, string>, lostJobs: string[], queue: Queue<DomainEventJob>) {
  for (const id of lostJobs) await (await queue.getJob(id))!.remove()
  const now = await relayKeys(redisPrefix)
  for (const key of now.keys()) if (!replica.has(key)) await redis.del(key)
  for (const [key, value] of replica) await redis.set(key, value)
}

test('Redis goes back in time (a failover to a replica that was behind): the jobs it lost are published again', async () => {
  const { queue, relay, redisPrefix } = fixture()
  const r = relay()
  const first = await writeOutboxEvent(model, event('behind:1'))
  await waitFor(allRelayed)
  const replica = await relayKeys(redisPrefix)
  expect(replica.size).toBe(2) // the marker and this relay's count
  const second = await writeOutboxEvent(model, event('behind:2'))
  await waitFor(async () => (await allRelayed()) && (await queue.getJob(second)) !== undefined)
  // the replica that takes over had the first event's job and the relay keys of then, not the second's
  await failOverTo(redisPrefix, replica, [second], queue)
  await r.drain()
  expect((await queue.getJob(second))?.data.eventId).toBe(second)
  expect((await queue.getJob(first))?.data.eventId).toBe(first)
  expect(await unrelayed()).toBe(0)
  // the count moved on from there: the next scan replays nothing
  expect(await r.drain()).toBe(0)
})

test('Redis goes back in time while every relay of the domain restarts (a crash that lost its last second of writes): the new relay finds the newest job gone and publishes it again', async () => {
  const { queue, relay, redisPrefix } = fixture()
  const before = relay()
  const first = await writeOutboxEvent(model, event('restarted:1'))
  await waitFor(async () => (await allRelayed()) && (await queue.getJob(first)) !== undefined)
  await settled(before)
  const replica = await relayKeys(redisPrefix)
  const lost = await writeOutboxEvent(model, event('restarted:lost'))
  await waitFor(async () => (await allRelayed()) && (await queue.getJob(lost)) !== undefined)
  await settled(before)
  await before.stop()
  // Redis comes back as it was before the last publish: the marker is there, the job is not
  await failOverTo(redisPrefix, replica, [lost], queue)
  const after = relay()
  // before, a relay with no publishes of its own to count found nothing amiss, and the event was never delivered
  await after.drain()
  expect((await queue.getJob(lost))?.data.eventId).toBe(lost)
  expect(await unrelayed()).toBe(0)
  // only at a relay's first scan, and a restart with nothing lost relays nothing again
  expect(await after.drain()).toBe(0)
  await after.stop()
  expect(await relay().drain()).toBe(0)
})

test('Redis goes back in time, then another relay of the domain publishes before this one scans: the lost job is still published again', async () => {
  const { queue, relay, redisPrefix } = fixture()
  const a = relay()
  const b = relay()
  await a.drain()
  await b.drain()
  const replica = await relayKeys(redisPrefix)
  // relay A publishes an event (inserted as another process would: no in-process wake-up), then Redis fails over to
  // a replica without its job
  const lost = outboxEventId('replicas:lost')
  await model.collection.insertOne({ _id: lost, ...event('replicas:lost'), occurredAt: new Date(), relayed: false, relayedAt: null } as never)
  expect(await a.drain()).toBe(1)
  await failOverTo(redisPrefix, replica, [lost], queue)
  // relay B publishes another event (a shared sequence was raised back past what A had seen by this)
  const other = outboxEventId('replicas:other')
  await model.collection.insertOne({ _id: other, ...event('replicas:other'), occurredAt: new Date(), relayed: false, relayedAt: null } as never)
  expect(await b.drain()).toBe(1)
  expect(await queue.getJob(lost)).toBeUndefined()
  // A's scan finds its count older than it wrote: every event of the window is relayed again
  await a.drain()
  expect((await queue.getJob(lost))?.data.eventId).toBe(lost)
  expect(await unrelayed()).toBe(0)
})

test("Redis goes back in time, then this relay publishes before it scans: the publish finds its count older, and the scan replays", async () => {
  const { queue, relay, redisPrefix } = fixture()
  const r = relay()
  await r.drain()
  const first = await writeOutboxEvent(model, event('own:1'))
  await waitFor(async () => (await allRelayed()) && (await queue.getJob(first)) !== undefined)
  const replica = await relayKeys(redisPrefix)
  const lost = await writeOutboxEvent(model, event('own:lost'))
  await waitFor(async () => (await allRelayed()) && (await queue.getJob(lost)) !== undefined)
  await failOverTo(redisPrefix, replica, [lost], queue)
  // a request's event is published by its wake-up before the next scan
  const next = await writeOutboxEvent(model, event('own:next'))
  await waitFor(async () => (await queue.getJob(next)) !== undefined)
  await r.drain()
  expect((await queue.getJob(lost))?.data.eventId).toBe(lost)
})

test('Redis losing its data, then a write published before the next scan: the scan still replays what was relayed (the publish does not make the lost sequence again)', async () => {
  const { relay, queue, redisPrefix } = fixture()
  const r = relay()
  expect(await r.drain()).toBe(0) // a first start: the sequence begins at 1, as far as this process has seen
  // Redis loses its data; an event relayed an hour ago had not become a delivery yet
  const key = relayAliveKey(redisPrefix, 'payments')
  await redis.del(key)
  const anHourAgo = new Date(Date.now() - 3600_000)
  await model.collection.insertOne({ _id: outboxEventId('lost:1'), ...event('lost:1'), occurredAt: anHourAgo, relayed: true, relayedAt: anHourAgo } as never)
  // a request's event is published by its wake-up (the next scan is a minute away)
  const written = await writeOutboxEvent(model, event('after-loss:1'))
  await waitFor(async () => (await queue.getJob(written)) !== undefined)
  await r.drain()
  expect(await queue.getJob(outboxEventId('lost:1'))).toBeDefined()
})

test('a relay marker of any value (a date, an earlier relay\'s sequence) is taken as Redis having kept its data: no replay', async () => {
  const { relay, redisPrefix, jobCount, queue } = fixture()
  const id = await writeOutboxEvent(model, event('legacy:1'))
  const key = relayAliveKey(redisPrefix, 'payments')
  const marker = new Date().toISOString()
  await redis.set(key, marker)
  await model.updateMany({}, { $set: { relayed: true, relayedAt: new Date() } })
  // and the event's job, as a Redis that kept its data has it
  await queue.add('payment.completed', { eventId: id } as DomainEventJob, { jobId: id })
  const r = relay()
  expect(await r.drain()).toBe(0)
  expect(await jobCount()).toBe(1)
  expect(await redis.get(key)).toBe(marker)
})

describe('retention', () => {
  const DAY = 24 * 3600_000
  const stored = (key: string, occurredAt: Date, relayedAt: Date | null) =>
    ({ _id: outboxEventId(key), ...event(key), occurredAt, relayed: relayedAt !== null, relayedAt }) as never
  const present = async (key: string) => (await model.exists({ _id: outboxEventId(key) })) !== null

  test('a scan deletes the events relayed before the retention, in batches; newer ones and unrelayed ones stay, however old', async () => {
    const { relay, queue } = fixture()
    const eightDaysAgo = new Date(Date.now() - 8 * DAY)
    // more than one delete batch of expired events
    await model.collection.insertMany(Array.from({ length: 1500 }, (_, i) => stored(`expired:${i}`, eightDaysAgo, eightDaysAgo)))
    await model.collection.insertMany([
      stored('relayed-late', eightDaysAgo, new Date(Date.now() - 3600_000)),
      stored('recent', new Date(Date.now() - 3 * DAY), new Date(Date.now() - 3 * DAY)),
      stored('waiting', eightDaysAgo, null),
    ])

    const r = relay()
    await r.drain()
    expect(await model.countDocuments({ _id: { $regex: '^evt_' } })).toBe(3)
    for (const key of ['relayed-late', 'recent', 'waiting']) expect(await present(key)).toBe(true)
    // the old event that was still waiting was relayed, not deleted (and the one relayed an hour ago again: a first
    // start replays the replay window); no deleted event was relayed
    expect((await model.findById(outboxEventId('waiting')).lean())?.relayed).toBe(true)
    expect((await queue.getJobs()).map((j) => j.id).sort()).toEqual([outboxEventId('relayed-late'), outboxEventId('waiting')].sort())
  })

  test('a prune that stops at its most leaves the rest to the next scan, not to the next interval (a busy domain\'s outbox grew for ever)', async () => {
    const { relay } = fixture()
    const eightDaysAgo = new Date(Date.now() - 8 * DAY)
    await model.collection.insertMany(Array.from({ length: 2500 }, (_, i) => stored(`backlog:${i}`, eightDaysAgo, eightDaysAgo)))
    const r = relay({ pruneMaxPerRun: 1000 })
    const left = () => model.countDocuments({ _id: { $regex: '^evt_' } })
    // the start's scan and this one: 1,000 each
    await r.drain()
    expect(await left()).toBe(500)
    await r.drain()
    expect(await left()).toBe(0)
  })

  test('once per prune interval; the retention is never shorter than the replay window', async () => {
    const { relay } = fixture()
    const r = relay()
    await r.drain() // the first scan prunes (nothing to delete)
    const eightDaysAgo = new Date(Date.now() - 8 * DAY)
    await model.collection.insertOne(stored('expired-later', eightDaysAgo, eightDaysAgo))
    await r.drain()
    expect(await present('expired-later')).toBe(true) // the last prune was just now

    await relay({ pruneIntervalMs: 0 }).drain()
    expect(await present('expired-later')).toBe(false)

    expect(() => relay({ retentionMs: DAY, replayWindowMs: 2 * DAY })).toThrow('retentionMs must be at least replayWindowMs')
  })
})

test('events written many at once are relayed once each, by their ids; writing them again (some or all) changes nothing', async () => {
  const { relay, jobCount } = fixture()
  const r = relay() // polls every minute: only the writes' notices relay them
  expect(await r.drain()).toBe(0)
  const first = await writeOutboxEvents(model, [event('ticket.issued:t1'), event('ticket.issued:t2')])
  expect(first).toEqual([outboxEventId('ticket.issued:t1'), outboxEventId('ticket.issued:t2')])
  const again = await writeOutboxEvents(model, [event('ticket.issued:t2'), event('ticket.issued:t3'), event('ticket.issued:t1')])
  expect(again).toEqual([outboxEventId('ticket.issued:t2'), outboxEventId('ticket.issued:t3'), outboxEventId('ticket.issued:t1')])
  await waitFor(async () => (await model.countDocuments({ relayed: true })) === 3)
  expect(await model.countDocuments({})).toBe(3)
  expect(await jobCount()).toBe(3)
})

test('the backlog is on /metrics: how many events wait to be relayed, and how long the oldest has waited', async () => {
  const { relay } = fixture()
  const metrics = createMetrics('test-relay-backlog')
  const r = relay({ metrics })
  await r.drain()
  const read = async () => {
    const text = await metrics.registry.metrics()
    const value = (name: string) => Number(new RegExp(`^${name}\\{[^}]*source="payments"[^}]*\\} (\\S+)$`, 'm').exec(text)?.[1])
    return { unrelayed: value('svc_outbox_unrelayed'), oldest: value('svc_outbox_oldest_unrelayed_seconds') }
  }
  expect(await read()).toEqual({ unrelayed: 0, oldest: 0 })
  // written by another process (no wake-up here), one of them a minute ago
  const aMinuteAgo = new Date(Date.now() - 60_000)
  await model.collection.insertMany([
    { _id: outboxEventId('backlog:1'), ...event('backlog:1'), occurredAt: aMinuteAgo, relayed: false, relayedAt: null },
    { _id: outboxEventId('backlog:2'), ...event('backlog:2'), occurredAt: new Date(), relayed: false, relayedAt: null },
  ] as never[])
  const waiting = await read()
  expect(waiting.unrelayed).toBe(2)
  expect(waiting.oldest).toBeGreaterThanOrEqual(60)
  await r.drain()
  expect(await read()).toEqual({ unrelayed: 0, oldest: 0 })
})
