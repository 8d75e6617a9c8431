/**
 * A process that closes (SIGTERM: runProcess stops its servers) answers the requests in flight, and each such answer
 * closes its connection: a keep-alive client then goes elsewhere for its next request, and its socket does not keep
 * the server's close waiting for the keep-alive timeout. A request still arriving (headers or body trickled) is ended
 * at once: Node no longer enforces its timeouts once the server closes.
 */
import { Agent, request } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
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

test('connections whose request is still arriving (headers, or a body) are ended at the close; a request received whole is answered', async () => {
  // the timeouts of a public host: Node stops checking them once the server closes
  const app = Fastify({ requestTimeout: 30_000, http: { headersTimeout: 10_000, connectionsCheckingInterval: 2_500 } })
  await app.register(operationsRoutes, { metrics: createMetrics('closing-stalled-test'), metricsToken: 'm'.repeat(32), readiness: {} })
  let arrived!: () => void
  const inFlight = new Promise<void>((resolve) => (arrived = resolve))
  app.post('/slow', async () => {
    arrived()
    await new Promise((r) => setTimeout(r, 300))
    return { ok: true }
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  /** a client that sends `text` and then nothing more; resolves with what it was answered once its connection ends */
  const stalled = (text: string) =>
    new Promise<{ connected: Promise<void>; answer: Promise<string> }>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      let answer = ''
      socket.on('data', (chunk) => (answer += chunk.toString()))
      socket.on('error', () => undefined)
      const ended = new Promise<string>((done) => socket.on('close', () => done(answer)))
      const connected = new Promise<void>((done) => socket.once('connect', () => socket.write(text, () => done())))
      resolve({ connected, answer: ended })
    })
  const body = JSON.stringify({ a: 1 })
  try {
    const [headers, upload, whole] = await Promise.all([
      stalled('POST /slow HTTP/1.1\r\nHost: x\r\nContent-Ty'),
      stalled(`POST /slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 3)}`),
      stalled(`POST /slow HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`),
    ])
    await Promise.all([headers.connected, upload.connected, whole.connected, inFlight])
    // the server has read the partial ones by the time the whole one is being answered
    await new Promise((r) => setTimeout(r, 100))
    const closed = app.close()
    await expect(Promise.race([closed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('still open'), 5_000))])).resolves.toBe('closed')
    expect(await headers.answer).toBe('')
    expect(await upload.answer).toBe('')
    expect(await Promise.race([whole.answer, new Promise((r) => setTimeout(() => r('no answer'), 5_000))])).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*connection: close[\s\S]*\{"ok":true\}$/i)
  } finally {
    await app.close()
  }
})
