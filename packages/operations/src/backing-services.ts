/** Which failures of a backing service pass with a retry: answered 503 ServiceUnavailable, never a 500. */

/** Redis's answers for a server that cannot take the command now (a failover, a restart, memory full). */
const REDIS_BUSY_REPLY = /^(READONLY|LOADING|OOM|MASTERDOWN|BUSY|TRYAGAIN|CLUSTERDOWN)\b/

/**
 * ioredis gave up on a command (its retries while reconnecting used up), its connection is closed, or Redis answered
 * that it cannot take commands now (a replica during a failover, a server loading its data): all pass with a retry.
 */
export function isRedisUnavailable(err: unknown): boolean {
  const e = err as { name?: unknown; message?: unknown }
  if (e.name === 'MaxRetriesPerRequestError' || e.message === 'Connection is closed.' || e.message === 'Command timed out') return true
  return e.name === 'ReplyError' && typeof e.message === 'string' && REDIS_BUSY_REPLY.test(e.message)
}

/**
 * The options of a Redis client that serves requests (rate limits, JWT replay, sessions, the seat map, delivery logs,
 * job adds): a command with no answer in 2 s fails, and is answered 503, rather than holding its request. A Redis that
 * stopped answering with its connection open (a paused machine, a network partition, the old address of a primary
 * that failed over) would otherwise hold every request until the kernel dropped the socket, about 15 minutes; TCP
 * keep-alive notices such a connection sooner too. Not for BullMQ workers, whose blocking reads wait on purpose.
 */
export const REQUEST_REDIS_OPTIONS = { commandTimeout: 2000, keepAlive: 10_000 } as const

/** How often a connection that keeps failing is logged: a Redis away for minutes is a few lines, not one per reconnect. */
export const CONNECTION_ERROR_LOG_INTERVAL_MS = 30_000

/**
 * Logs the errors of a connection to a backing service (an ioredis client, a BullMQ queue or worker) as structured
 * warn lines, at most one per `intervalMs`. Attaching the listener is also what keeps ioredis from printing
 * "[ioredis] Unhandled error event" with a stack to stderr at every reconnect.
 */
export function logConnectionErrors(
  emitter: { on(event: 'error', listener: (err: Error) => void): unknown },
  log: { warn(obj: object, msg: string): void } | undefined,
  message: string,
  intervalMs = CONNECTION_ERROR_LOG_INTERVAL_MS,
): void {
  let last = -Infinity
  emitter.on('error', (err: Error) => {
    const now = Date.now()
    if (now - last < intervalMs) return
    last = now
    log?.warn({ err }, message)
  })
}

/** The codes of a connection that failed itself (refused, reset, timed out, unreachable), as ioredis passes them on. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH'])

/** A connection to Redis failing or unavailable, rather than a fault of the code using it. */
export function isConnectionError(err: unknown): boolean {
  return CONNECTION_CODES.has(String((err as { code?: unknown }).code)) || isRedisUnavailable(err)
}

/**
 * Logs a Redis outage as long-running consumers (BullMQ workers) meet it: the first connection error a warn line,
 * then at most one per `intervalMs` saying how long it has lasted, and one info line with its length once `ready`
 * (their connection) is ready again. Other errors stay error lines, each. A worker's every reconnect and blocked read
 * is an error event: logged each, a 20 s outage was 158 error lines with stacks, and nothing said when it ended.
 */
export function logRedisOutage(
  emitters: readonly { on(event: 'error', listener: (err: Error) => void): unknown }[],
  ready: { on(event: 'ready', listener: () => void): unknown },
  log: { warn(obj: object, msg: string): void; info(obj: object, msg: string): void; error(obj: object, msg: string): void },
  what: string,
  intervalMs = CONNECTION_ERROR_LOG_INTERVAL_MS,
): void {
  let since: number | null = null
  let lastLine = -Infinity
  for (const emitter of emitters) {
    emitter.on('error', (err: Error) => {
      if (!isConnectionError(err)) return log.error({ err }, `${what}: error`)
      const now = Date.now()
      since ??= now
      if (now - lastLine < intervalMs) return
      lastLine = now
      log.warn({ err: { code: (err as { code?: unknown }).code, message: err.message }, failingForMs: now - since }, `${what}: Redis is away; waiting for it`)
    })
  }
  ready.on('ready', () => {
    if (since === null) return
    log.info({ failedForMs: Date.now() - since }, `${what}: Redis is back`)
    since = null
    lastLine = -Infinity
  })
}
