/**
 * Which errors mean the database is out of reach (for now): a request meeting one is answered 503, a start-up step
 * meeting one waits, and an operator command exits 75 (try again later).
 */

/**
 * The MongoDB driver's (and mongoose's) errors for a database that cannot be reached: the request may succeed when
 * retried, so it is answered 503 ServiceUnavailable, not 500 (by name: mongoose wraps the driver's selection error).
 */
const DATABASE_UNREACHABLE = new Set([
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoServerSelectionError',
  'MongooseServerSelectionError',
  'MongoNotConnectedError',
  'MongoPoolClearedError',
  'PoolClearedOnNetworkError',
  'MongoWaitQueueTimeoutError',
  'MongoTopologyClosedError',
])

/**
 * FerretDB answers when it cannot reach its own backend (PostgreSQL restarting, out of connections), or, on SQLite
 * (used when no PostgreSQL answers), when its database file is locked by another writer: an `InternalError` (code 1)
 * whose message is the backend driver's. The database is away, or busy, all the same: a retry passes.
 */
const BACKEND_UNREACHABLE = /failed to connect to `|too many clients|the database system is (starting up|shutting down|in recovery mode)|\(SQLITE_BUSY\)/

function isBackendUnreachable(err: Error): boolean {
  // an insertMany gets the same answer as a bulk error
  return (err.name === 'MongoServerError' || err.name === 'MongoBulkWriteError') && (err as { code?: unknown }).code === 1 && BACKEND_UNREACHABLE.test(err.message)
}

/**
 * A replica set changing its primary (an election, a stepdown, a member shutting down) answers with one of these
 * codes (the driver's retryable ones), or labels its answer RetryableWriteError: the driver retries a single-document
 * operation once, not an updateMany or deleteMany, and not when the election outlasts that retry. A retry passes.
 */
const REPLICA_STATE_CHANGE = new Set([6, 7, 89, 91, 134, 189, 9001, 10107, 11600, 11602, 13435, 13436])

function isReplicaStateChange(err: Error): boolean {
  if (err.name !== 'MongoServerError' && err.name !== 'MongoBulkWriteError' && err.name !== 'MongoWriteConcernError') return false
  const { code, hasErrorLabel } = err as { code?: unknown; hasErrorLabel?: (label: string) => boolean }
  return (typeof code === 'number' && REPLICA_STATE_CHANGE.has(code)) || hasErrorLabel?.call(err, 'RetryableWriteError') === true
}

/**
 * A socket that the database closed, met by a write before the driver noticed: the driver lets Node's own error through
 * (`This socket has been ended by the other party`, EPIPE) instead of a MongoNetworkError. Seen in the fault run while
 * FerretDB was killed. A subgraph's other sockets (Redis, the gateway) are as retryable when they fail this way.
 */
const SOCKET_CLOSED = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED'])

/** An insertMany whose connection closed under it: a bulk error that wraps the driver's network error. */
function wrappedError(err: Error): unknown {
  return err.name === 'MongoBulkWriteError' ? (err as { errorResponse?: unknown }).errorResponse : undefined
}

export function isDatabaseUnreachable(err: unknown): boolean {
  if (!(err instanceof Error)) return false
  // a model's operation waits for a lost connection to come back, then fails this way (bufferTimeoutMS, 10 s)
  return (
    DATABASE_UNREACHABLE.has(err.name) ||
    (err.name === 'MongooseError' && /buffering timed out/.test(err.message)) ||
    isBackendUnreachable(err) ||
    isReplicaStateChange(err) ||
    SOCKET_CLOSED.has(String((err as { code?: unknown }).code)) ||
    (wrappedError(err) instanceof Error && isDatabaseUnreachable(wrappedError(err)))
  )
}

/**
 * The errors of a database away for a moment: a connection refused or reset, no server to select, a pool cleared,
 * a replica set electing a primary, FerretDB's backend out of reach.
 */
export function isDatabaseAway(err: unknown): boolean {
  return (
    err instanceof Error &&
    // Mongoose's own for a first connection that finds no server (a refused port), the driver's once connected
    (/^Mongo(ose)?(Network|NetworkTimeout|ServerSelection|PoolCleared|TopologyClosed)Error$/.test(err.name) ||
      isBackendUnreachable(err) ||
      isReplicaStateChange(err) ||
      isDatabaseAway(wrappedError(err)))
  )
}

