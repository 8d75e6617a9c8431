/** The endpoint health clock (delivery/endpoint-health.ts) on a real Redis, with the time given. */
import Redis from 'ioredis'
import { isolate } from '@svc/testing/src/isolation'
import { createEndpointHealth } from '../src/delivery/endpoint-health'

const iso = isolate('events_endpoint_health')
let redis: Redis

beforeAll(() => {
  redis = new Redis(iso.redisUrl)
})
afterAll(async () => {
  const keys = await redis.keys(`${iso.redisPrefix}*`)
  if (keys.length > 0) await redis.del(...keys)
  await redis.quit()
})

const HOOK = 'webhook https://hooks.example.com/events'
const failed = { delivered: false, statusCode: 500 }
const delivered = { delivered: true, statusCode: 200 }

it('disables after every attempt failed for the period, counted from the first failure since the last success', async () => {
  const health = createEndpointHealth(redis, iso.redisPrefix, 1000, 1000)
  const t0 = 1_000_000
  expect(await health.record('did:web:a.example', 'test', HOOK, failed, t0)).toBeNull()
  expect(await health.record('did:web:a.example', 'test', HOOK, failed, t0 + 999)).toBeNull()
  // another app environment has a clock of its own
  expect(await health.record('did:web:a.example', 'live', HOOK, failed, t0 + 1000)).toBeNull()
  expect(await health.record('did:web:a.example', 'test', HOOK, failed, t0 + 1000)).toBe('failing')

  // a success starts it again
  expect(await health.record('did:web:a.example', 'test', HOOK, delivered, t0 + 1001)).toBeNull()
  expect(await health.record('did:web:a.example', 'test', HOOK, failed, t0 + 1500)).toBeNull()
  expect(await health.record('did:web:a.example', 'test', HOOK, failed, t0 + 2499)).toBeNull()
  expect(await health.record('did:web:a.example', 'test', HOOK, failed, t0 + 2500)).toBe('failing')
})

it('410 Gone disables at once; other 4xx count as failures', async () => {
  const health = createEndpointHealth(redis, iso.redisPrefix, 60_000, 30_000)
  expect(await health.record('did:web:b.example', 'test', HOOK, { delivered: false, statusCode: 404 }, 1)).toBeNull()
  expect(await health.record('did:web:b.example', 'test', HOOK, { delivered: false, statusCode: 410 }, 2)).toBe('gone')
})

it('each endpoint (channel and URL) has its clock: a new URL starts afresh', async () => {
  const health = createEndpointHealth(redis, iso.redisPrefix, 1000, 1000)
  const t0 = 2_000_000
  expect(await health.record('did:web:c.example', 'test', HOOK, failed, t0)).toBeNull()
  expect(await health.record('did:web:c.example', 'test', 'webhook https://new.example.com/events', failed, t0 + 1000)).toBeNull()
  expect(await health.record('did:web:c.example', 'test', 'xrpc https://hooks.example.com', failed, t0 + 1000)).toBeNull()
  expect(await health.record('did:web:c.example', 'test', HOOK, failed, t0 + 1000)).toBe('failing')
})

it('a reset (the endpoint was disabled) starts the clock afresh: its first failure once enabled again does not disable it', async () => {
  const health = createEndpointHealth(redis, iso.redisPrefix, 1000, 1000)
  const t0 = 3_000_000
  expect(await health.record('did:web:d.example', 'test', HOOK, failed, t0)).toBeNull()
  expect(await health.record('did:web:d.example', 'test', HOOK, failed, t0 + 1000)).toBe('failing')
  await health.reset('did:web:d.example', 'test', HOOK)
  // the app unpaused it days later; a cold start fails once
  expect(await health.record('did:web:d.example', 'test', HOOK, failed, t0 + 6 * 24 * 3600 * 1000)).toBeNull()
})

it('a failure after a quiet longer than the retry schedule\'s longest wait starts the clock again: failing days ago and once now is not failing for days', async () => {
  const day = 24 * 3600 * 1000
  const health = createEndpointHealth(redis, iso.redisPrefix, 5 * day, 1.1 * day)
  const t0 = 4_000_000
  // a delivery's run failed over three days, its attempts at most a day apart
  for (const t of [0, 0.5, 1.4, 2.3, 3]) expect(await health.record('did:web:e.example', 'test', HOOK, failed, t0 + t * day)).toBeNull()
  // no event for three days, then one attempt fails
  expect(await health.record('did:web:e.example', 'test', HOOK, failed, t0 + 6 * day)).toBeNull()
  // from that one on it is failing all along: five days of it disable the endpoint
  for (const t of [7, 8, 9, 10]) expect(await health.record('did:web:e.example', 'test', HOOK, failed, t0 + t * day)).toBeNull()
  expect(await health.record('did:web:e.example', 'test', HOOK, failed, t0 + 11 * day)).toBe('failing')
})
