/** The per-environment log of developer utility calls (one entry per request id). */
import { ContractError } from '@svc/errors'
import { isDid, isEnvironment } from '@svc/vocabulary'
import { isDuplicateKeyError } from '../models'
import type { AppsDomain } from './context'
import type { DeveloperRequestInput as RequestLogInput } from '../generated/graph-types'

export type { RequestLogInput }

export const REQUEST_LOG_DEFAULT_LIMIT = 50
export const REQUEST_LOG_MAX_LIMIT = 200

/**
 * How long the request log keeps an entry. Every call of a developer route is written, a caller without a key's too,
 * so without an end the log grows with whatever anyone sends.
 */
export const REQUEST_LOG_RETENTION_MS = 30 * 24 * 3600 * 1000

/** Deletes the entries older than the retention (the apps process runs it every hour); answers how many went. */
export async function pruneRequestLog(d: Pick<AppsDomain, 'models'>, now: Date = new Date()): Promise<number> {
  const { deletedCount } = await d.models.RequestLog.deleteMany({ createdAt: { $lt: new Date(now.getTime() - REQUEST_LOG_RETENTION_MS) } })
  return deletedCount
}

/**
 * The environment and app are what the caller claimed (its query, its key); one that is not an environment or a DID is
 * recorded as none (such an entry is read by no app, and its text, say a NUL character, could not be stored).
 */
export async function recordRequest(d: Pick<AppsDomain, 'models'>, entry: RequestLogInput): Promise<void> {
  const environment = isEnvironment(entry.environment) ? entry.environment : null
  const appDid = isDid(entry.appDid) ? entry.appDid : null
  try {
    await d.models.RequestLog.create({ ...entry, environment, appDid, durationMs: Math.max(0, Math.round(entry.durationMs)) })
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err // the same request recorded twice stays one entry
  }
}

export async function listRequests(
  d: Pick<AppsDomain, 'models'>,
  filter: { environment?: string | null; appDid?: string | null; limit?: number | null },
) {
  const query: Record<string, unknown> = {}
  if (filter.environment) query.environment = filter.environment
  if (filter.appDid) query.appDid = filter.appDid
  const limit = filter.limit ?? REQUEST_LOG_DEFAULT_LIMIT
  // refused, as every other list refuses it, rather than read as the nearest bound
  if (!Number.isInteger(limit) || limit < 1 || limit > REQUEST_LOG_MAX_LIMIT) throw new ContractError('InvalidRequest', `limit must be an integer from 1 to ${REQUEST_LOG_MAX_LIMIT}`)
  const docs = await d.models.RequestLog.find(query).sort({ createdAt: -1 }).limit(limit).lean()
  return docs.map((d) => ({ ...d, createdAt: (d.createdAt as Date).toISOString() }))
}
