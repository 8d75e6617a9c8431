/** The per-environment log of developer utility calls (one entry per request id). */
import { isDuplicateKeyError } from '../models'
import type { AppsDomain } from './context'
import type { DeveloperRequestInput as RequestLogInput } from '../generated/graph-types'

export type { RequestLogInput }

export const REQUEST_LOG_MAX_LIMIT = 200

export async function recordRequest(d: Pick<AppsDomain, 'models'>, entry: RequestLogInput): Promise<void> {
  const environment = entry.environment === 'test' || entry.environment === 'live' ? entry.environment : null
  try {
    await d.models.RequestLog.create({ ...entry, environment, durationMs: Math.max(0, Math.round(entry.durationMs)) })
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
  const limit = Math.min(Math.max(filter.limit ?? 50, 1), REQUEST_LOG_MAX_LIMIT)
  const docs = await d.models.RequestLog.find(query).sort({ createdAt: -1 }).limit(limit).lean()
  return docs.map((d) => ({ ...d, createdAt: (d.createdAt as Date).toISOString() }))
}
