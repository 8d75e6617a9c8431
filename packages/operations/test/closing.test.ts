/**
 * A process that closes (SIGTERM: runProcess stops its servers) answers the requests in flight, and each such answer
 * closes its connection: a keep-alive client then goes elsewhere for its next request, and its socket does not keep
 * the server's close waiting for the keep-alive timeout.
 */
import { Agent, request } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { createMetrics, operationsRoutes } from '../src'

test('a request in flight when the server closes is answered, with Connection: close, and the close ends once it is', async () => {
  const app = Fastify()
  await app.register(operationsRoutes, { metrics: createMetrics('closing-test'), metricsToken: 'm'.repeat(32), readiness: {} })
  let arrived!: () => void
  const inFlight = new Promise<void>((resolve) => (arrived = resolve))
  app.get('/slow', async () => {
    arrived()
    await new Promise((r) => setTimeout(r, 300))
    return { ok: true }
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  // a pooled connection, as a balancer's or the gateway's
  const agent = new Agent({ keepAlive: true })
  const get = (path: string) =>
    new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, path, agent }, (res) => {
        res.resume()
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }))
      })
      req.on('error', reject)
      req.end()
    })
  try {
    expect(await get('/livez')).toEqual({ status: 200, connection: 'keep-alive' })
    const slow = get('/slow')
    await inFlight
    const closed = app.close()
    expect(await slow).toEqual({ status: 200, connection: 'close' })
    // the keep-alive timeout is 72 s: a close still waiting on the pooled socket would not end within this
    await expect(Promise.race([closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('still open'), 10_000))])).resolves.toBe('closed')
  } finally {
    agent.destroy()
    await app.close()
  }
})
