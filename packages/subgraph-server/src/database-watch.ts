/**
 * A process's database connection that stays broken after the database came back is made again.
 *
 * Why: the MongoDB driver (7.8, 7.9) can wedge for good when the server goes away at the wrong moment. Its monitor
 * writes a heartbeat to a socket that closed between its check and its write, then waits for a `drain` that a
 * destroyed socket never emits. Nothing then marks the server known again, so every operation of the process fails
 * server selection, while a new connection to the same database works. Seen in the fault run after a FerretDB
 * restart: the tickets subgraph never reached its database again, and paid holds waited for their tickets.
 *
 * So the connection is pinged every `intervalMs` (its readyState aside). Once it has failed for `reconnectAfterMs`, a new client connects to
 * the same URL; if it can, the database is back and the connection's client is stuck, so the connection takes the new
 * client (mongoose's `setClient`: its models work on through it) and the stuck one is closed. A database that is
 * really away fails the new client's connect too, and nothing changes.
 */
import mongoose, { type Connection, type ConnectOptions } from 'mongoose'
import pTimeout from 'p-timeout'

export interface DatabaseWatchOptions {
  /** the options the connection was opened with, for its new client */
  clientOptions: ConnectOptions
  /** called once the connection has a new client */
  onReopen?: (conn: Connection) => void
  logger: { warn(obj: object, msg: string): void; error(obj: object, msg: string): void }
  /** how often the connection is pinged (default 5 s) */
  intervalMs?: number
  /** how long the pings may fail before a new client probes the database (default 30 s) */
  reconnectAfterMs?: number
}

/** How long a new client may take to connect before the database counts as really away. */
const CONNECT_WAIT_MS = 5000

/** Whether `op` succeeds within `ms`: a stuck client never answers, it does not fail. */
function answers(op: () => Promise<unknown>, ms: number): Promise<boolean> {
  return pTimeout(
    op().then(() => true, () => false),
    { milliseconds: ms, fallback: () => false },
  )
}

export function watchDatabase(conn: Connection, url: string, opts: DatabaseWatchOptions): { stop(): void } {
  const intervalMs = opts.intervalMs ?? 5000
  const reconnectAfterMs = opts.reconnectAfterMs ?? 30_000
  const pingMs = Math.min(2000, intervalMs)
  let failingSince: number | null = null
  let running = false
  let stopped = false

  const check = async () => {
    if (running || stopped) return
    running = true
    try {
      // pinged whatever readyState says: mongoose calls a connection disconnected once no heartbeat came for two
      // intervals, also while its operations work (a busy process), and replacing that client would close the
      // operations in flight on it (each a 503)
      if (conn.db && (await answers(() => conn.db!.admin().ping(), pingMs))) {
        failingSince = null
        return
      }
      failingSince ??= Date.now()
      const failingForMs = Date.now() - failingSince
      if (failingForMs < reconnectAfterMs) return
      // the new client is the probe: a database really away fails its connect, and nothing changes
      const fresh = new mongoose.mongo.MongoClient(url, opts.clientOptions)
      if (!(await answers(() => fresh.connect(), CONNECT_WAIT_MS))) {
        await fresh.close().catch(() => undefined)
        return
      }
      // mongoose marks a connection whose server is unknown disconnected, and takes a new client only then
      if (conn.readyState !== mongoose.ConnectionStates.disconnected) {
        await fresh.close()
        return
      }
      opts.logger.warn({ failingForMs }, 'the database answers a new connection but not this one: it takes a new client')
      const stuck = conn.getClient()
      conn.setClient(fresh)
      failingSince = null
      opts.onReopen?.(conn)
      // its cursors and sessions end through server selections that cannot succeed: let it take its time
      void stuck.close().catch(() => undefined)
    } catch (err) {
      opts.logger.error({ err }, 'giving the database connection a new client failed; trying again at the next check')
    } finally {
      running = false
    }
  }

  const timer = setInterval(() => void check(), intervalMs)
  timer.unref()
  return {
    stop() {
      stopped = true
      clearInterval(timer)
    },
  }
}
