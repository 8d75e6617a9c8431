/**
 * The adapter's error plugin when Redis is out of reach: a real ioredis client aimed at a closed port gives up on
 * its command (MaxRetriesPerRequestError, as when Redis restarts under the JWT replay check or a rate limit), and
 * the route answers 503 ServiceUnavailable through real HTTP, never a 500. Anything else unexpected stays a masked 500.
 */
import { createServer, type Server } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import Redis from 'ioredis'
import { errorsPlugin } from '../src/plugins/errors'
import { assertionVerifier } from '../src/auth/assertion'
import type { ServiceAuthVerifier } from '@svc/service-auth'

let app: FastifyInstance
let redis: Redis
/** A server speaking Redis's protocol that answers every command as a replica does a write during a failover. */
let replica: Server
let readOnly: Redis

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
  replica = createServer((socket) => socket.on('data', () => socket.write("-READONLY You can't write against a read only replica.\r\n")))
  await new Promise<void>((resolve) => replica.listen(0, '127.0.0.1', resolve))
  readOnly = new Redis({ host: '127.0.0.1', port: (replica.address() as { port: number }).port, enableReadyCheck: false, maxRetriesPerRequest: 0 })
  readOnly.on('error', () => undefined)
  app = Fastify({ logger: false })
  await app.register(errorsPlugin)
  app.get('/uses-redis', async () => ({ value: await redis.get('k') }))
  app.get('/closed-redis', async () => {
    const closed = new Redis({ lazyConnect: true })
    closed.disconnect()
    return { value: await closed.get('k') }
  })
  app.get('/read-only-redis', async () => ({ value: await readOnly.set('k', 'v') }))
  // an assertion whose replay check meets the same Redis: the service's failure, not the assertion's
  const verify = assertionVerifier({ verify: async () => readOnly.set('jti', '1', 'NX') } as unknown as ServiceAuthVerifier)
  app.get('/assertion', async () => {
    await verify('a.b.c', { nsid: 'tickets.svc.claimFreeTicket', iss: 'did:plc:x', code: 'BuyerAssertionInvalid' })
    return {}
  })
  app.get('/throws', async () => {
    throw new Error('boom: a secret detail')
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
})
afterAll(async () => {
  redis.disconnect()
  readOnly.disconnect()
  await new Promise((resolve) => replica.close(resolve))
  await app.close()
})

const url = (path: string) => `http://127.0.0.1:${(app.server.address() as { port: number }).port}${path}`

it('a command ioredis gave up on answers 503 ServiceUnavailable', async () => {
  const res = await fetch(url('/uses-redis'))
  expect(res.status).toBe(503)
  expect(await res.json()).toEqual({ error: 'ServiceUnavailable', message: 'a backing service is unavailable; retry with backoff' })
  // a client that honours Retry-After (the SDK does) waits a little before its retry
  expect(res.headers.get('retry-after')).toBe('2')
})

it('a command on a closed connection answers 503 ServiceUnavailable', async () => {
  const res = await fetch(url('/closed-redis'))
  expect(res.status).toBe(503)
  expect(((await res.json()) as { error: string }).error).toBe('ServiceUnavailable')
})

it('any other unexpected error stays a masked 500', async () => {
  const res = await fetch(url('/throws'))
  expect(res.status).toBe(500)
  expect(res.headers.get('retry-after')).toBeNull()
  expect(await res.json()).toEqual({ error: 'InternalServerError', message: 'internal error' })
})

it('Redis answering that it cannot take commands now (READONLY during a failover) answers 503, also under an assertion check', async () => {
  for (const path of ['/read-only-redis', '/assertion']) {
    const res = await fetch(url(path))
    expect([path, res.status]).toEqual([path, 503])
    expect(((await res.json()) as { error: string }).error).toBe('ServiceUnavailable')
  }
})
