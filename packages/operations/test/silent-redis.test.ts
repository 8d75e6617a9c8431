/**
 * A Redis that stops answering with its connection open (a paused machine, a partition, the old address of a primary
 * that failed over): a request's command fails within REQUEST_REDIS_OPTIONS' timeout, as "unavailable" (a 503), rather
 * than holding the request until the kernel drops the socket.
 */
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net'
import Redis from 'ioredis'
import { isRedisUnavailable, REQUEST_REDIS_OPTIONS } from '../src'

let silent: Server
const sockets = new Set<Socket>()

beforeAll(async () => {
  // answers the client's ready check (INFO), then nothing more
  silent = createServer((socket) => {
    sockets.add(socket)
    let answered = false
    socket.on('data', () => {
      if (answered) return
      answered = true
      const info = '# Server\r\nredis_version:7.0.0\r\nloading:0\r\n'
      socket.write(`$${Buffer.byteLength(info)}\r\n${info}\r\n`)
    })
  })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
})
afterAll(async () => {
  for (const socket of sockets) socket.destroy()
  await new Promise((resolve) => silent.close(resolve))
})

test('a command Redis never answers fails after the timeout, and counts as Redis unavailable', async () => {
  const redis = new Redis(`redis://127.0.0.1:${(silent.address() as AddressInfo).port}`, { maxRetriesPerRequest: 1, ...REQUEST_REDIS_OPTIONS })
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
