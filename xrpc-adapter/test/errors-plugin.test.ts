/**
 * The adapter's error plugin when Redis is out of reach: a real ioredis client aimed at a closed port gives up on
 * its command (MaxRetriesPerRequestError, as when Redis restarts under the JWT replay check or a rate limit), and
 * the route answers 503 ServiceUnavailable through real HTTP, never a 500. Anything else unexpected stays a masked 500.
 */
import { createServer } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import Redis from 'ioredis'
import { errorsPlugin } from '../src/plugins/errors'

let app: FastifyInstance
let redis: Redis

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

beforeAll(async () => {
  redis = new Redis({ host: '127.0.0.1', port: await closedPort(), maxRetriesPerRequest: 1, retryStrategy: () => 10, lazyConnect: false })
  redis.on('error', () => undefined)
  app = Fastify({ logger: false })
  await app.register(errorsPlugin)
  app.get('/uses-redis', async () => ({ value: await redis.get('k') }))
  app.get('/closed-redis', async () => {
    const closed = new Redis({ lazyConnect: true })
    closed.disconnect()
    return { value: await closed.get('k') }
  })
  app.get('/throws', async () => {
    throw new Error('boom: a secret detail')
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
})
afterAll(async () => {
  redis.disconnect()
  await app.close()
})

const url = (path: string) => `http://127.0.0.1:${(app.server.address() as { port: number }).port}${path}`

it('a command ioredis gave up on answers 503 ServiceUnavailable', async () => {
  const res = await fetch(url('/uses-redis'))
  expect(res.status).toBe(503)
  expect(await res.json()).toEqual({ error: 'ServiceUnavailable', message: 'a backing service is unavailable; retry with backoff' })
})

it('a command on a closed connection answers 503 ServiceUnavailable', async () => {
  const res = await fetch(url('/closed-redis'))
  expect(res.status).toBe(503)
  expect(((await res.json()) as { error: string }).error).toBe('ServiceUnavailable')
})

it('any other unexpected error stays a masked 500', async () => {
  const res = await fetch(url('/throws'))
  expect(res.status).toBe(500)
  expect(await res.json()).toEqual({ error: 'InternalServerError', message: 'internal error' })
})
