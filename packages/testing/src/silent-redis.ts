/**
 * A Redis that answers a client's ready check (INFO) and then nothing more, its connection left open: a paused
 * machine, a partition, the old address of a primary that failed over. For tests of what waits on Redis.
 */
import { createServer, type AddressInfo, type Socket } from 'node:net'

export interface SilentRedis {
  url: string
  close(): Promise<void>
}

export async function startSilentRedis(): Promise<SilentRedis> {
  const sockets = new Set<Socket>()
  const server = createServer((socket) => {
    sockets.add(socket)
    let answered = false
    socket.on('data', () => {
      if (answered) return
      answered = true
      const info = '# Server\r\nredis_version:7.0.0\r\nloading:0\r\n'
      socket.write(`$${Buffer.byteLength(info)}\r\n${info}\r\n`)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `redis://127.0.0.1:${(server.address() as AddressInfo).port}/0`,
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
