/**
 * A producer queue on a connection whose commands fail while Redis is away: BullMQ's one-time version check (INFO,
 * when the queue is made) failing once must not leave the queue refusing every add for good, and a queue made while
 * Redis is away fails its adds rather than hold them until Redis comes back.
 */
import { once } from 'node:events'
import { createServer, type AddressInfo } from 'node:net'
import { Queue } from 'bullmq'
import Redis from 'ioredis'
import { isolate } from '@svc/testing/src/isolation'
import { producerQueue, queuePrefix } from '../src'

const { redisUrl, redisPrefix } = isolate('producer-queue')

/** A ready connection whose next INFO fails, as when Redis drops between its ready and the answer. */
async function infoFailsOnce(): Promise<Redis> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  await once(redis, 'ready')
  const info = redis.info.bind(redis)
  let failed = false
  redis.info = ((...args: Parameters<typeof info>) => {
    if (failed) return info(...args)
    failed = true
    return Promise.reject(new Error('Connection is closed.'))
  }) as typeof redis.info
  return redis
}

test('adds once Redis answers, though its version check would have failed', async () => {
  const redis = await infoFailsOnce()
  const queue = producerQueue<{ n: number }>('producer-queue-test', redis, queuePrefix(redisPrefix))
  queue.on('error', () => undefined)
  try {
    const job = await queue.add('x', { n: 1 }, { jobId: 'one' })
    expect(job.id).toBe('one')
  } finally {
    await queue.obliterate({ force: true })
    await queue.close()
    redis.disconnect()
  }
})

test('what it guards against: a plain queue on such a connection refuses every add after that one failed check', async () => {
  const redis = await infoFailsOnce()
  const queue = new Queue('producer-queue-plain', { connection: redis, prefix: queuePrefix(redisPrefix) })
  queue.on('error', () => undefined)
  try {
    await expect(queue.add('x', { n: 1 })).rejects.toThrow('Connection is closed.')
    await expect(queue.add('x', { n: 2 })).rejects.toThrow('Connection is closed.')
  } finally {
    await queue.close().catch(() => undefined)
    redis.disconnect()
  }
})

test('made while Redis is away, an add fails at once instead of waiting for Redis', async () => {
  // a port that refuses connections
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  const redis = new Redis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 1, retryStrategy: () => 200 })
  redis.on('error', () => undefined)
  const queue = producerQueue<{ n: number }>('producer-queue-away', redis, queuePrefix(redisPrefix))
  queue.on('error', () => undefined)
  try {
    const outcome = await Promise.race([
      queue.add('x', { n: 1 }).then(() => 'added', (err: Error) => `failed: ${err.message}`),
      new Promise((resolve) => setTimeout(() => resolve('still waiting after 5 s'), 5000)),
    ])
    expect(outcome).toMatch(/^failed: /)
  } finally {
    await queue.close().catch(() => undefined)
    redis.disconnect()
  }
})
