/**
 * watchDatabase against the real FerretDB: a connection whose driver is stuck while the database answers gets a new
 * client and its models work; a database that is really away is left alone.
 */
import mongoose, { type Connection } from 'mongoose'
import { freePort, isolate } from '@svc/testing'
import { connectDomain, watchDatabase } from '../src'

const createModels = async (conn: Connection) => ({ Thing: conn.model('Thing', new mongoose.Schema({ name: String })) })

function recordingLogger() {
  const lines: string[] = []
  const log = (_: object, msg: string) => void lines.push(msg)
  return { lines, logger: { warn: log, error: log } }
}

/** resolves to the operation's result, or to 'no answer' after `ms` (a stuck client neither answers nor fails) */
const within = <T>(ms: number, op: Promise<T>) => Promise.race([op, new Promise<'no answer'>((r) => setTimeout(() => r('no answer'), ms))])

/**
 * Puts the driver in the state the fault run found it in after a FerretDB restart (driver internals, on purpose):
 * its monitor's socket closes without the monitor noticing, so the heartbeat it is woken for waits for a `drain` that
 * never comes; then the server is marked unknown, as an operation's network error does. Only the stuck monitor could
 * mark it known again.
 */
async function wedge(conn: Connection) {
  type Internal = { s: { servers: Map<string, InternalServer> } }
  type InternalServer = {
    monitor: { connection: { socket: import('node:net').Socket } | null; requestCheck(): void }
    description: { hostAddress: unknown; constructor: new (address: unknown, reply: undefined, opts: { error: Error }) => unknown }
    emit(event: string, description: unknown): void
  }
  const server = [...(conn.getClient() as unknown as { topology: Internal }).topology.s.servers.values()][0]!
  const socket = server.monitor.connection?.socket
  if (!socket) throw new Error('the monitor has no connection to wedge')
  socket.removeAllListeners('close')
  socket.destroy()
  server.monitor.requestCheck()
  await new Promise((r) => setTimeout(r, 100))
  const error = new mongoose.mongo.MongoNetworkError('connection closed')
  server.emit('descriptionReceived', new server.description.constructor(server.description.hostAddress, undefined, { error }))
}

it('a connection stuck while the database answers takes a new client, and its models work on through it', async () => {
  const { mongoUrl } = isolate('database_watch')
  const { conn, models, clientOptions } = await connectDomain(mongoUrl, createModels)
  const { lines, logger } = recordingLogger()
  const watch = watchDatabase(conn, mongoUrl, { clientOptions, logger, intervalMs: 200, reconnectAfterMs: 1000 })
  try {
    await models.Thing.create({ name: 'before' })
    await wedge(conn)
    expect(await within(1500, models.Thing.countDocuments().exec().catch(() => 'failed'))).not.toBe(1)

    const deadline = Date.now() + 30_000
    let count: unknown = null
    while (count !== 1 && Date.now() < deadline) count = await within(1000, models.Thing.countDocuments().exec().catch(() => 'failed'))
    expect(count).toBe(1)
    expect(lines).toContain('the database answers a new connection but not this one: it takes a new client')
    await models.Thing.create({ name: 'after' })
    expect(await models.Thing.countDocuments()).toBe(2)
  } finally {
    watch.stop()
    await conn.dropDatabase().catch(() => undefined)
    await conn.close()
  }
})

it('a connection that answers keeps its client, even while mongoose calls it disconnected (no heartbeat for two intervals)', async () => {
  const { mongoUrl } = isolate('database_watch_answers')
  const { conn, models, clientOptions } = await connectDomain(mongoUrl, createModels)
  const { lines, logger } = recordingLogger()
  const client = conn.getClient()
  // mongoose's readyState says disconnected when the last heartbeat is older than two heartbeat intervals, though the
  // client's operations work: a busy process, or a monitor that stopped while the server stayed known
  const stale = () => void ((conn as unknown as { _lastHeartbeatAt: number })._lastHeartbeatAt = Date.now() - 60_000)
  stale()
  const keepStale = setInterval(stale, 50)
  const watch = watchDatabase(conn, mongoUrl, { clientOptions, logger, intervalMs: 100, reconnectAfterMs: 300 })
  try {
    expect(conn.readyState).toBe(mongoose.ConnectionStates.disconnected)
    await models.Thing.create({ name: 'during' })
    await new Promise((r) => setTimeout(r, 1500))
    expect(lines).toEqual([])
    expect(conn.getClient()).toBe(client)
    expect(await models.Thing.countDocuments()).toBe(1)
  } finally {
    clearInterval(keepStale)
    ;(conn as unknown as { _lastHeartbeatAt: number })._lastHeartbeatAt = Date.now()
    watch.stop()
    await conn.dropDatabase().catch(() => undefined)
    await conn.close()
  }
})

it('a database that is really away is left alone: a new client cannot reach it either', async () => {
  const url = `mongodb://127.0.0.1:${await freePort()}/away`
  const conn = mongoose.createConnection(url, { serverSelectionTimeoutMS: 500 })
  conn.on('error', () => undefined)
  const { lines, logger } = recordingLogger()
  const watch = watchDatabase(conn, url, { clientOptions: { serverSelectionTimeoutMS: 500 }, logger, intervalMs: 100, reconnectAfterMs: 300 })
  try {
    await new Promise((r) => setTimeout(r, 2000))
    expect(lines).toEqual([])
  } finally {
    watch.stop()
    await conn.close().catch(() => undefined)
  }
})
