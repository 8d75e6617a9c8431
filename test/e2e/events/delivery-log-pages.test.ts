/**
 * The delivery log in pages (services/events/src/domain/delivery-log-pages.ts), on the real database and Redis and
 * through the developer route GET {checkout_url}/api/webhooks/atm: every written delivery gets the next number of its
 * app environment's log and that number's page; the newest deliveries are read page by page, in the log's order,
 * with one environment and one app never seeing another's; a status filter reads the pages while they hold enough of
 * that status, and the full query for a rare one; numbers skipped by repeated events, a counter Redis lost
 * (the full query answers meanwhile, the next write rebuilds it from the database, also from two processes at once),
 * and deliveries stored before numbering all leave the answer exact.
 */
import mongoose from 'mongoose'
import { connectEvents, createDelivery, LOG_PAGE_SIZE, logCounterKey, logPageKey, newDeliveryId, newestByPages, type DeliveryLogStore, type NewDelivery } from '@svc/events'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectOk } from '../adapter/helpers'
import { ALL_PERMISSIONS, insertDelivery, listDeliveries } from '../adapter/events-helpers'

let stack: TestStack
beforeAll(async () => {
  stack = await startStack('delivery-log-pages', { workers: false })
})
afterAll(async () => {
  await stack?.stop()
})

const delivery = (appDid: string, environment: 'test' | 'live' = 'test', id = newDeliveryId()): NewDelivery => ({
  id,
  appDid,
  environment,
  eventId: null,
  eventType: 'payment.completed',
  source: 'payments',
  createdAt: new Date(),
  data: {},
})

async function newApp(): Promise<{ app: TestApp; key: string; liveKey: string }> {
  const app = await stack.newApp({ environments: ['test', 'live'] })
  return { app, key: await app.apiKey('test', ALL_PERMISSIONS), liveKey: await app.apiKey('live', ALL_PERMISSIONS) }
}

/** The log through HTTP: the listed ids. */
async function listed(app: TestApp, key: string, limit?: number, status?: string): Promise<string[]> {
  const body = expectOk(await listDeliveries(stack, { app: app.did, ...(limit ? { limit: String(limit) } : {}), ...(status ? { status } : {}) }, bearer(key)))
  return body.deliveries.map((d: { id: string }) => d.id)
}

/** The stored deliveries of an app environment in the log's order (newest number first), read without the pages. */
async function inLogOrder(appDid: string, environment: 'test' | 'live' = 'test', status?: 'pending' | 'held' | 'delivered' | 'failed'): Promise<{ _id: string; logSeq: number | null; logPage: number | null }[]> {
  return stack.events.Delivery.find({ appDid, environment, ...(status ? { status } : {}) }, { logSeq: 1, logPage: 1 }).sort({ logSeq: -1, createdAt: -1, _id: -1 }).lean() as never
}

/** The finds one call makes, with their filters. */
async function findsOf(call: () => Promise<unknown>): Promise<Record<string, unknown>[]> {
  const finds: Record<string, unknown>[] = []
  // the hook every test file has (packages/testing/src/indexed-queries.ts) still sees them
  const previous = mongoose.get('debug') as ((this: unknown, ...args: unknown[]) => void) | false
  mongoose.set('debug', function (this: unknown, collection: string, method: string, filter: Record<string, unknown>, ...rest: unknown[]) {
    if (collection === 'deliveries' && method === 'find') finds.push(filter)
    if (previous) previous.call(this, collection, method, filter, ...rest)
  })
  try {
    await call()
  } finally {
    mongoose.set('debug', previous)
  }
  return finds
}

it('concurrent writes number each app environment 1, 2, 3, … and page them; the newest pages answer the log', async () => {
  const { app, key, liveKey } = await newApp()
  const other = await newApp()
  // 70 of the app's test deliveries, 30 live ones and 30 of another app, all in flight together (a few batches)
  await Promise.all([
    ...Array.from({ length: 70 }, () => createDelivery(stack.deliveryLog, delivery(app.did))),
    ...Array.from({ length: 30 }, () => createDelivery(stack.deliveryLog, delivery(app.did, 'live'))),
    ...Array.from({ length: 30 }, () => createDelivery(stack.deliveryLog, delivery(other.app.did))),
  ])
  const stored = await inLogOrder(app.did)
  expect(stored.map((d) => d.logSeq)).toEqual(Array.from({ length: 70 }, (_, i) => 70 - i))
  for (const d of stored) expect(d.logPage).toBe(`test ${app.did} ${Math.floor(d.logSeq! / LOG_PAGE_SIZE)}`)
  expect((await inLogOrder(app.did, 'live')).map((d) => d.logSeq)).toEqual(Array.from({ length: 30 }, (_, i) => 30 - i))
  expect((await inLogOrder(other.app.did)).map((d) => d.logSeq)).toEqual(Array.from({ length: 30 }, (_, i) => 30 - i))

  const newestFirst = stored.map((d) => d._id)
  expect(await listed(app, key)).toEqual(newestFirst.slice(0, 20))
  expect(await listed(app, key, 1)).toEqual(newestFirst.slice(0, 1))
  expect(await listed(app, key, 100)).toEqual(newestFirst)
  expect(await listed(app, liveKey)).toEqual((await inLogOrder(app.did, 'live')).map((d) => d._id).slice(0, 20))
  expect(await listed(other.app, other.key, 100)).toEqual((await inLogOrder(other.app.did)).map((d) => d._id))

  // 20 newest of 70 (numbers 51–70): pages 2 and 1, each an equality on the page's key; never the whole log
  const finds = await findsOf(() => listed(app, key))
  expect(finds).toEqual([{ logPage: logPageKey('test', app.did, 2) }, { logPage: logPageKey('test', app.did, 1) }])
})

it('a status filter: the newest pages answer a common status; a rare one is handed to the full query after the first pages', async () => {
  const { app, key } = await newApp()
  await Promise.all(Array.from({ length: 300 }, () => createDelivery(stack.deliveryLog, delivery(app.did))))
  const stored = await inLogOrder(app.did)
  // delivered, but for a few failed ones among the oldest, and every seventh of the newest still pending
  const failed = stored.filter((d) => [3, 41, 77].includes(d.logSeq!)).map((d) => d._id)
  const pending = stored.filter((d) => d.logSeq! > 200 && d.logSeq! % 7 === 0).map((d) => d._id)
  await stack.events.Delivery.updateMany({ appDid: app.did }, { $set: { status: 'delivered' } })
  await stack.events.Delivery.updateMany({ _id: { $in: failed } }, { $set: { status: 'failed' } })
  await stack.events.Delivery.updateMany({ _id: { $in: pending } }, { $set: { status: 'pending' } })

  // delivered: 20 of the newest 50 numbers' pages (11 and 12) hold enough; an equality on the page, the status checked on what it holds
  const delivered = (await inLogOrder(app.did, 'test', 'delivered')).map((d) => d._id)
  let answer: string[] = []
  const finds = await findsOf(async () => (answer = await listed(app, key, 20, 'delivered')))
  expect(answer).toEqual(delivered.slice(0, 20))
  expect(finds).toEqual([
    { logPage: logPageKey('test', app.did, 12) },
    { logPage: logPageKey('test', app.did, 11) },
  ])
  // 100 of them: more pages, in rounds sized by what the first pages held
  expect(await listed(app, key, 100, 'delivered')).toEqual(delivered.slice(0, 100))

  // pending: 14 within the newest 100 numbers; fewer than asked, so the pages read on until the budget says stop
  const pendingInOrder = (await inLogOrder(app.did, 'test', 'pending')).map((d) => d._id)
  expect(pendingInOrder).toHaveLength(pending.length)
  expect(await listed(app, key, 5, 'pending')).toEqual(pendingInOrder.slice(0, 5))
  expect(await listed(app, key, 20, 'pending')).toEqual(pendingInOrder)

  // failed: none in the newest pages; the full query answers after those two reads
  const failedFinds = await findsOf(async () => (answer = await listed(app, key, 20, 'failed')))
  expect(answer).toEqual((await inLogOrder(app.did, 'test', 'failed')).map((d) => d._id))
  expect(answer).toHaveLength(3)
  expect(failedFinds).toEqual([
    { logPage: logPageKey('test', app.did, 12) },
    { logPage: logPageKey('test', app.did, 11) },
    { appDid: app.did, environment: 'test', status: 'failed' },
  ])
})

it('numbers skipped by repeated events are read past; the answer stays exact', async () => {
  const { app, key } = await newApp()
  const first = await Promise.all(Array.from({ length: 30 }, () => createDelivery(stack.deliveryLog, delivery(app.did))))
  // 60 repeats of stored deliveries: each takes a number and inserts nothing, so pages 1 and 2 hold few or none
  for (let round = 0; round < 2; round++) await Promise.all(first.map((d) => createDelivery(stack.deliveryLog, delivery(app.did, 'test', d._id))))
  const latest = await Promise.all(Array.from({ length: 5 }, () => createDelivery(stack.deliveryLog, delivery(app.did))))
  expect(latest.map((d) => d.logSeq)).toEqual([91, 92, 93, 94, 95])
  expect(await stack.events.Delivery.countDocuments({ appDid: app.did })).toBe(35)
  const expected = (await inLogOrder(app.did)).map((d) => d._id)
  expect(await listed(app, key)).toEqual(expected.slice(0, 20))
  expect(await listed(app, key, 100)).toEqual(expected)
})

it('a counter Redis lost: the full query answers, and the next write numbers on from the highest stored', async () => {
  const { app, key } = await newApp()
  await Promise.all(Array.from({ length: 40 }, () => createDelivery(stack.deliveryLog, delivery(app.did))))
  const before = await listed(app, key)
  await stack.redis.del(logCounterKey(stack.redisPrefix, app.did, 'test'))

  const finds = await findsOf(async () => expect(await listed(app, key)).toEqual(before))
  expect(finds).toEqual([{ appDid: app.did, environment: 'test' }])

  // two processes (their own connections and batches) write at once and both find the counter gone
  const second = await connectEvents(stack.mongoUrl)
  try {
    const other: DeliveryLogStore = { models: second.models, redis: stack.redis, redisPrefix: stack.redisPrefix }
    const made = await Promise.all([...Array.from({ length: 5 }, () => createDelivery(stack.deliveryLog, delivery(app.did))), ...Array.from({ length: 5 }, () => createDelivery(other, delivery(app.did)))])
    expect(made.map((d) => d.logSeq).sort((a, b) => a! - b!)).toEqual([41, 42, 43, 44, 45, 46, 47, 48, 49, 50])
  } finally {
    await second.conn.close()
  }
  expect(await stack.redis.get(logCounterKey(stack.redisPrefix, app.did, 'test'))).toBe('50')
  const expected = (await inLogOrder(app.did)).map((d) => d._id)
  expect(await listed(app, key)).toEqual(expected.slice(0, 20))
  expect(expected.slice(10, 30)).toEqual(before)
})

it('a counter behind the numbers stored (Redis failed over to a replica that lagged): the full query answers, and the next write numbers on from the highest stored', async () => {
  const { app, key } = await newApp()
  await Promise.all(Array.from({ length: 60 }, () => createDelivery(stack.deliveryLog, delivery(app.did))))
  await stack.redis.set(logCounterKey(stack.redisPrefix, app.did, 'test'), '30')
  expect(await listed(app, key)).toEqual((await inLogOrder(app.did)).map((d) => d._id).slice(0, 20))
  const next = await createDelivery(stack.deliveryLog, delivery(app.did))
  expect(next.logSeq).toBe(61)
  expect((await listed(app, key))[0]).toBe(next._id)
})

it('a writer crossing into the next page while the log is read is no counter behind: the counter stays, the pages answer with its delivery', async () => {
  const { app, key } = await newApp()
  await Promise.all(Array.from({ length: 2 * LOG_PAGE_SIZE - 1 }, () => createDelivery(stack.deliveryLog, delivery(app.did))))
  const counterKey = logCounterKey(stack.redisPrefix, app.did, 'test')
  expect(await stack.redis.get(counterKey)).toBe(String(2 * LOG_PAGE_SIZE - 1))
  // right after the read takes the counter, a write takes the next number (the next page's first) and inserts it
  const get = stack.redis.get.bind(stack.redis)
  let crossed: string | null = null
  const spy = jest.spyOn(stack.redis, 'get').mockImplementation((async (k: string) => {
    const value = await get(k)
    if (k === counterKey && crossed === null) crossed = (await createDelivery(stack.deliveryLog, delivery(app.did)))._id
    return value
  }) as never)
  let page: { _id: string }[] | null
  try {
    page = await newestByPages(stack.deliveryLog, app.did, 'test', 20)
  } finally {
    spy.mockRestore()
  }
  expect(crossed).not.toBeNull()
  expect(await stack.redis.get(counterKey)).toBe(String(2 * LOG_PAGE_SIZE))
  expect(page?.map((d) => d._id)).toEqual((await inLogOrder(app.did)).map((d) => d._id).slice(0, 20))
  expect(page?.[0]?._id).toBe(crossed)
  expect(await listed(app, key)).toEqual(page?.map((d) => d._id))
})

it('deliveries stored before numbering come after the numbered ones, oldest last', async () => {
  const { app, key } = await newApp()
  const start = Date.now() - 3600_000
  const unnumbered: string[] = []
  for (let i = 0; i < 8; i++) unnumbered.push(await insertDelivery(stack, { appDid: app.did, environment: 'test', createdAt: new Date(start + i * 60_000) }))
  const numbered = await Promise.all(Array.from({ length: 5 }, () => createDelivery(stack.deliveryLog, delivery(app.did))))
  const newestNumbered = numbered.sort((a, b) => b.logSeq! - a.logSeq!).map((d) => d._id)
  // fewer numbered than asked: the full query, numbered first, then the older ones by time
  expect(await listed(app, key)).toEqual([...newestNumbered, ...unnumbered.reverse()])
  expect(await listed(app, key, 3)).toEqual(newestNumbered.slice(0, 3))
})
