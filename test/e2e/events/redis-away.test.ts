/**
 * The events subgraph while its Redis cannot be reached (a restart, a failover): the operations that add to the
 * delivery queue answer ServiceUnavailable, which the app retries with backoff, instead of holding the request until
 * the gateway gives up and then running it when Redis is back (a test event the app had been told failed).
 */
import Redis from 'ioredis'
import pino from 'pino'
import { createDelivery, newDeliveryId, startEventsService } from '@svc/events'
import { freePort, isolate, signedContext, testCallerKeys } from '@svc/testing'

const APP = 'did:web:events-redis-away.example.com'
const callerKeys = testCallerKeys()
const iso = isolate('events-redis-away')
let events: Awaited<ReturnType<typeof startEventsService>>

beforeAll(async () => {
  // nothing listens there: every connection is refused, as while Redis restarts
  const redisUrl = `redis://127.0.0.1:${await freePort()}/0`
  events = await startEventsService({
    mongoUrl: iso.mongoUrl,
    callerKeys,
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
    redisUrl,
    redisPrefix: iso.redisPrefix,
    secretKey: 'k'.repeat(32),
  })
})
afterAll(async () => {
  await events?.stop()
})

interface Answer {
  data?: Record<string, unknown> | null
  errors?: { message: string; extensions?: { code?: string } }[]
}

async function asAdapter(query: string, variables: Record<string, unknown>): Promise<Answer> {
  const res = await fetch(events.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'svc-context': signedContext(callerKeys, { kind: 'service', name: 'xrpc-adapter' }) },
    body: JSON.stringify({ query, variables }),
    // an answer, not a request held open until Redis returns
    signal: AbortSignal.timeout(20_000),
  })
  return (await res.json()) as Answer
}

it('createTestDelivery answers ServiceUnavailable, and writes nothing', async () => {
  const app = 'did:web:events-redis-away-test-event.example.com'
  const answer = await asAdapter(`mutation($a: ID!) { createTestDelivery(appDid: $a, environment: "test") { id } }`, { a: app })
  expect(answer.errors?.map((e) => e.extensions?.code)).toEqual(['ServiceUnavailable'])
  expect(await events.models.Delivery.countDocuments({ appDid: app })).toBe(0)
})

describe('a failed delivery', () => {
  let failed: string
  beforeAll(async () => {
    // written with a Redis that answers (the log numbers it there), as the workers did before Redis went away
    const redis = new Redis(iso.redisUrl)
    try {
      failed = newDeliveryId()
      await createDelivery({ models: events.models, redis, redisPrefix: iso.redisPrefix }, { id: failed, appDid: APP, environment: 'test', eventId: null, eventType: 'payment.completed', source: 'payments', createdAt: new Date(), data: { n: 1 } })
      await events.models.Delivery.collection.updateOne({ _id: failed as never }, { $set: { status: 'failed', failedAt: new Date() } })
    } finally {
      redis.disconnect()
    }
  })

  it('is in the delivery log, read from the database', async () => {
    const answer = await asAdapter(`query($a: ID!) { deliveries(appDid: $a, environment: "test") { id status } }`, { a: APP })
    expect(answer.errors).toBeUndefined()
    expect(answer.data).toEqual({ deliveries: [{ id: failed, status: 'failed' }] })
  })

  it('is not redriven: ServiceUnavailable, and it stays failed', async () => {
    const answer = await asAdapter(`mutation($a: ID!, $d: String) { redriveDeliveries(appDid: $a, environment: "test", input: { deliveryId: $d }) { queued } }`, { a: APP, d: failed })
    expect(answer.errors?.map((e) => e.extensions?.code)).toEqual(['ServiceUnavailable'])
    expect(await events.models.Delivery.findById(failed).lean()).toMatchObject({ status: 'failed' })
  })
})
