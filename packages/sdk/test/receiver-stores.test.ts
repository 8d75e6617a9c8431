/**
 * The claim stores under concurrency: 20 parallel handleDelivery calls for one delivery id run the handler exactly
 * once, for the memory store, Redis (db 15, unique prefix) and MongoDB on the test FerretDB (isolate()); a failed
 * handler releases the claim so a retry runs; a lapsed claim can be taken over and its old owner cannot release it.
 */
import { randomBytes } from 'node:crypto'
import Redis from 'ioredis'
import mongoose from 'mongoose'
import { isolate } from '@svc/testing'
import {
  API_VERSION,
  ReceiverError,
  createMemoryClaimStore,
  createMongoClaimStore,
  createRedisClaimStore,
  handleDelivery,
  type ClaimCollection,
  type DeliveryClaimStore,
  type EventEnvelope,
} from '../src'

const iso = isolate('sdk_receiver_stores')
let redis: Redis
let conn: mongoose.Connection
let collection: ClaimCollection

beforeAll(async () => {
  redis = new Redis(iso.redisUrl)
  conn = await mongoose.createConnection(iso.mongoUrl).asPromise()
  collection = conn.db!.collection('webhook_claims') as unknown as ClaimCollection
})
afterAll(async () => {
  const keys = await redis.keys(`${iso.redisPrefix}*`)
  if (keys.length) await redis.del(...keys)
  await redis.quit()
  await conn.dropDatabase().catch(() => undefined)
  await conn.close()
})

const envelope = (): EventEnvelope => ({
  id: `whd_${randomBytes(8).toString('hex')}`,
  type: 'payment.completed',
  createdAt: new Date().toISOString(),
  apiVersion: API_VERSION,
  environment: 'live',
  data: {},
})

const kinds: [string, (worker: number) => DeliveryClaimStore][] = [
  ['memory', (() => {
    const shared = createMemoryClaimStore()
    return () => shared
  })()],
  // one store instance per "worker", as separate processes would have
  ['redis', () => createRedisClaimStore(redis, { prefix: `${iso.redisPrefix}claims:` })],
  ['mongo', () => createMongoClaimStore(collection)],
]

describe.each(kinds)('%s claim store', (_kind, storeFor) => {
  it('20 parallel deliveries of one id: the handler runs exactly once; later ones are duplicates', async () => {
    for (let round = 0; round < 3; round++) {
      const env = envelope()
      let runs = 0
      const handlers = {
        'payment.completed': async () => {
          runs++
          await new Promise((r) => setTimeout(r, 30))
        },
      }
      const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => handleDelivery({ store: storeFor(i), envelope: env, handlers })))
      // every outcome, so a failure shows what each request got (an error other than DeliveryInProgress included)
      const outcomes = results.map((r) => (r.status === 'fulfilled' ? (r.value.duplicate ? 'duplicate' : 'ran') : ((r.reason as ReceiverError).code ?? String(r.reason))))
      expect({ runs, ran: outcomes.filter((o) => o === 'ran').length, others: outcomes.filter((o) => o !== 'ran' && o !== 'DeliveryInProgress' && o !== 'duplicate') }).toEqual({ runs: 1, ran: 1, others: [] })
      expect(await handleDelivery({ store: storeFor(99), envelope: env, handlers })).toMatchObject({ duplicate: true })
      expect(runs).toBe(1)
    }
  })

  it('a failed handler releases the claim: the retry runs it, then it is done', async () => {
    const store = storeFor(0)
    const env = envelope()
    let runs = 0
    const handlers = {
      'payment.completed': async () => {
        if (++runs === 1) throw new Error('boom')
      },
    }
    await expect(handleDelivery({ store, envelope: env, handlers })).rejects.toThrow('boom')
    expect(await handleDelivery({ store: storeFor(1), envelope: env, handlers })).toMatchObject({ duplicate: false })
    expect(await handleDelivery({ store, envelope: env, handlers })).toMatchObject({ duplicate: true })
    expect(runs).toBe(2)
  })

  it('a lapsed claim is taken over; the old owner’s release, from its own store or the new owner’s, does not drop the new claim', async () => {
    const a = storeFor(0)
    const b = storeFor(1)
    const id = envelope().id
    // a lease long enough that a loaded machine still asks again inside it, short enough to wait out
    const first = await a.claim(id, 1000)
    expect(first).toEqual({ state: 'claimed', token: expect.any(String) })
    expect(await b.claim(id, 60_000)).toEqual({ state: 'processing' })
    await new Promise((r) => setTimeout(r, 1100))
    const second = await b.claim(id, 60_000)
    expect(second).toEqual({ state: 'claimed', token: expect.any(String) })
    const late = (first as { token: string }).token
    // the first request, late, releases its claim: through its own store, and through the store now holding the new
    // claim (one store serves every request of a process)
    await a.release(id, late)
    await b.release(id, late)
    expect(await storeFor(2).claim(id, 60_000)).toEqual({ state: 'processing' })
    await b.complete(id, (second as { token: string }).token)
    expect(await storeFor(3).claim(id, 60_000)).toEqual({ state: 'done' })
  })
})

describe.each<[string, (doneTtlMs: number, now: () => number) => DeliveryClaimStore]>([
  ['memory', (doneTtlMs, now) => createMemoryClaimStore({ doneTtlMs, now })],
  ['redis', (doneTtlMs) => createRedisClaimStore(redis, { prefix: `${iso.redisPrefix}sliding:`, doneTtlMs })],
])('%s claim store: the done marker', (_kind, storeWith) => {
  it('is kept doneTtlMs after the last delivery that met it, so a delivery sent again later is still known', async () => {
    let clock = Date.now()
    const store = storeWith(2500, () => clock)
    const id = envelope().id
    const claimed = await store.claim(id, 60_000)
    await store.complete(id, (claimed as { token: string }).token)
    // met again before it lapses (a redriven run, answered as a duplicate), then again past the first 2.5 s (1 s to
    // spare each time, on real Redis)
    for (const wait of [1500, 1500]) {
      clock += wait
      await new Promise((r) => setTimeout(r, wait))
      expect(await store.claim(id, 60_000)).toEqual({ state: 'done' })
    }
  })
})

/**
 * The Mongo store only inserts and reads (each claim a new generation document, each end a new marker, all under
 * unique `_id`s), so it needs no atomic filtered update, which FerretDB 1.x lacks. This collection holds the first two
 * inserts made once it is armed until both are waiting, then lets them go the later one first: two requests that both
 * read before either wrote, the interleaving that is rare on a real server, happen every time.
 */
function racingInserts(real: ClaimCollection) {
  let armed = false
  const held: { go: () => void; done: Promise<unknown> }[] = []
  let bothHeld!: () => void
  const both = new Promise<void>((resolve) => (bothHeld = resolve))
  const collection: ClaimCollection = {
    findOne: (filter) => real.findOne(filter),
    async insertOne(doc) {
      if (!armed || held.length >= 2) return real.insertOne(doc)
      let go!: () => void
      const gate = new Promise<void>((resolve) => (go = resolve))
      const done = gate.then(() => real.insertOne(doc))
      held.push({ go, done: done.catch(() => undefined) })
      if (held.length === 2) bothHeld()
      return done
    },
  }
  const arm = () => {
    armed = true
  }
  /** Waits until two inserts are held (a test that never gets there times out), then lets them go the later first. */
  const later = async () => {
    await both
    for (const insert of [...held].reverse()) {
      insert.go()
      await insert.done
    }
  }
  return { collection, arm, later }
}

describe('mongo claim store: requests that read before either wrote (no atomic filtered update needed, which FerretDB lacks)', () => {
  const real = () => collection

  it('two requests taking over the same lapsed claim, both having read it before either wrote: only one of them is claimed', async () => {
    let clock = Date.now()
    const { collection: racing, arm, later } = racingInserts(real())
    const store = () => createMongoClaimStore(racing, { now: () => clock })
    const id = envelope().id
    expect(await store().claim(id, 1000)).toMatchObject({ state: 'claimed' })
    clock += 5000
    arm()
    const b = store().claim(id, 60_000)
    const c = store().claim(id, 60_000)
    await later()
    const states = (await Promise.all([b, c])).map((r) => r.state).sort()
    expect(states).toEqual(['claimed', 'processing'])
  })

  it('an old owner releasing its lapsed claim while another request takes it over does not free the delivery for a third', async () => {
    let clock = Date.now()
    const { collection: racing, arm, later } = racingInserts(real())
    const store = () => createMongoClaimStore(racing, { now: () => clock })
    const id = envelope().id
    const first = await store().claim(id, 1000)
    clock += 5000
    arm()
    // the release's end marker and the new claim's generation, each written after both read the lapsed claim
    const late = store().release(id, (first as { token: string }).token)
    const taken = store().claim(id, 60_000)
    await later()
    await late
    expect(await taken).toMatchObject({ state: 'claimed' })
    expect(await store().claim(id, 60_000)).toEqual({ state: 'processing' })
  })

  it('an end marker counts only for the generation it ended: one left from a purged generation ends no new claim', async () => {
    const store = createMongoClaimStore(collection)
    const id = envelope().id
    // generation 1 and its end were written long ago; a TTL index purged the generation first
    for (const _id of [`${id}#1:end`, `${id}#1:end:ab12`]) await collection.insertOne({ _id, token: 'ab12', state: 'ended', expiresAt: new Date(Date.now() + 1000) })
    const claimed = await store.claim(id, 60_000)
    expect(claimed).toMatchObject({ state: 'claimed', token: expect.stringMatching(/^1\./) })
    expect(await createMongoClaimStore(collection).claim(id, 60_000)).toEqual({ state: 'processing' })
    // and its own release ends it: the next request claims the delivery at once
    await store.release(id, (claimed as { token: string }).token)
    expect(await createMongoClaimStore(collection).claim(id, 60_000)).toMatchObject({ state: 'claimed', token: expect.stringMatching(/^2\./) })
  })

  it('a claim is kept at least until it lapses, whatever doneTtlMs is', async () => {
    const id = envelope().id
    const claimed = await createMongoClaimStore(collection, { doneTtlMs: 1000 }).claim(id, 60_000)
    const generation = await collection.findOne({ _id: `${id}#${(claimed as { token: string }).token.split('.')[0]}` })
    expect(generation!.expiresAt.getTime()).toBeGreaterThanOrEqual(generation!.lapsesAt!.getTime())
    expect(() => createMongoClaimStore(collection, { doneTtlMs: NaN })).toThrow(TypeError)
  })

  it('a claim of the store before generations is still honoured until it lapses', async () => {
    let clock = Date.now()
    const store = createMongoClaimStore(collection, { now: () => clock })
    const id = envelope().id
    await collection.insertOne({ _id: id, token: 'abc', state: 'processing', expiresAt: new Date(clock + 1000) })
    expect(await store.claim(id, 60_000)).toEqual({ state: 'processing' })
    clock += 5000
    expect(await store.claim(id, 60_000)).toMatchObject({ state: 'claimed' })
  })
})

test('the memory store forgets lapsed done markers and claims within a minute (it kept one entry per delivery, for ever)', async () => {
  let clock = 1_000_000
  const store = createMemoryClaimStore({ doneTtlMs: 10_000, now: () => clock })
  for (let i = 0; i < 500; i++) {
    const claim = await store.claim(`whd_done${i}`, 60_000)
    if (claim.state === 'claimed') await store.complete(`whd_done${i}`, claim.token)
  }
  // handlers that died: their claims lapse
  for (let i = 0; i < 100; i++) await store.claim(`whd_died${i}`, 5_000)
  expect(store.size).toBe(600)
  clock += 30_000
  expect(await store.claim('whd_done0', 60_000)).toMatchObject({ state: 'claimed' }) // lapsed, not swept yet
  clock += 31_000
  await store.claim('whd_new', 60_000)
  // what is left: the two live claims
  expect(store.size).toBe(2)
})
