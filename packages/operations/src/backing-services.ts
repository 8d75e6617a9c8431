/** Which failures of a backing service pass with a retry: answered 503 ServiceUnavailable, never a 500. */

/** Redis's answers for a server that cannot take the command now (a failover, a restart, memory full). */
const REDIS_BUSY_REPLY = /^(READONLY|LOADING|OOM|MASTERDOWN|BUSY|TRYAGAIN|CLUSTERDOWN)\b/

/**
 * ioredis gave up on a command (its retries while reconnecting used up), its connection is closed, or Redis answered
 * that it cannot take commands now (a replica during a failover, a server loading its data): all pass with a retry.
 */
export function isRedisUnavailable(err: unknown): boolean {
  const e = err as { name?: unknown; message?: unknown }
  if (e.name === 'MaxRetriesPerRequestError' || e.message === 'Connection is closed.') return true
  return e.name === 'ReplyError' && typeof e.message === 'string' && REDIS_BUSY_REPLY.test(e.message)
}
