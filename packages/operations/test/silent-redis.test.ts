/**
 * A Redis that stops answering with its connection open (a paused machine, a partition, the old address of a primary
 * that failed over): a request's command fails within REQUEST_REDIS_OPTIONS' timeout, as "unavailable" (a 503), rather
 * than holding the request until the kernel drops the socket.
 */
import Redis from 'ioredis'
import { startSilentRedis, type SilentRedis } from '@svc/testing'
import { isRedisUnavailable, REQUEST_REDIS_OPTIONS } from '../src'

let silent: SilentRedis

beforeAll(async () => {
  silent = await startSilentRedis()
})
afterAll(async () => {
  await silent.close()
})

test('a command Redis never answers fails after the timeout, and counts as Redis unavailable', async () => {
  const redis = new Redis(silent.url, { maxRetriesPerRequest: 1, ...REQUEST_REDIS_OPTIONS })
  try {
    const err = await redis.set('k', 'v', 'EX', 60, 'NX').then(
      () => null,
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(Error)
    expect(isRedisUnavailable(err)).toBe(true)
  } finally {
    redis.disconnect()
  }
}, 10_000)
