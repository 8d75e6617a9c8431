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
      expect(runs).toBe(1)
      const fulfilled = results.filter((r) => r.status === 'fulfilled').map((r) => (r as PromiseFulfilledResult<{ duplicate: boolean }>).value)
      expect(fulfilled.filter((v) => !v.duplicate)).toHaveLength(1)
      for (const r of results) {
        if (r.status === 'rejected') expect((r.reason as ReceiverError).code).toBe('DeliveryInProgress')
      }
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
    const store = storeWith(1500, () => clock)
    const id = envelope().id
    const claimed = await store.claim(id, 60_000)
    await store.complete(id, (claimed as { token: string }).token)
    // met again before it lapses (a redriven run, answered as a duplicate), then again past the first 1.5 s
    for (const wait of [1000, 1000]) {
      clock += wait
      await new Promise((r) => setTimeout(r, wait))
      expect(await store.claim(id, 60_000)).toEqual({ state: 'done' })
    }
  })
})
