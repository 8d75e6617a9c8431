/**
 * The delivery log in pages (docs/events.md, "The delivery log in pages"). FerretDB 1.x sorts in its own process after fetching
 * every match, so "an app's newest 20" would read all of the app's deliveries. Instead each delivery gets the next
 * number of its app environment's log when it is written (`logSeq`, counted in Redis with one INCRBY per insert
 * batch) and the key of the page that number falls in (`logPage`: environment, app DID and page number, LOG_PAGE_SIZE
 * numbers a page). The newest deliveries are then the newest pages, each read by an equality on that one key, which
 * an index serves on FerretDB and on MongoDB: a page of the log costs the same at a thousand deliveries or a million.
 *
 * The database stays the record: a counter Redis lost is rebuilt from the highest stored number before the next one
 * is given out, and until then the log is read with the full query (slower, same answer).
 */
import type { DeliveryDoc } from '../models'
import type { EventsDomain } from './context'
import type { Environment } from '@svc/vocabulary'
import { isRedisUnavailable } from '@svc/operations'

export const LOG_PAGE_SIZE = 25

export type DeliveryLogStore = Pick<EventsDomain, 'models' | 'redis' | 'redisPrefix'>

export const logCounterKey = (redisPrefix: string, appDid: string, environment: string) => `${redisPrefix}delivery-log:${environment}:${appDid}`

export const logPageNumber = (seq: number) => Math.floor(seq / LOG_PAGE_SIZE)

/**
 * A page's key names its app environment, so the equality on it alone is as narrow as the page: PostgreSQL, asked
 * for app, environment and page number as three conditions, combined the page number's index (every app's page n)
 * with the environment's (every delivery) before it looked at the app. DIDs hold no spaces.
 */
export const logPageKey = (environment: string, appDid: string, page: number) => `${environment} ${appDid} ${page}`

// INCRBY only an existing counter: a missing one (a new app environment, or Redis lost its data) is rebuilt first.
const INCRBY_EXISTING = `if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCRBY', KEYS[1], ARGV[1]) end return false`

// DEL only a counter that still holds what was read: one a writer moved on meanwhile is current
const DEL_IF_EQUALS = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

/** Gives each document the next numbers of its app environment's log (in the order given). */
export async function numberForLog(store: DeliveryLogStore, docs: DeliveryDoc[]): Promise<void> {
  const byLog = new Map<string, DeliveryDoc[]>()
  for (const d of docs) {
    const key = logCounterKey(store.redisPrefix, d.appDid, d.environment)
    const group = byLog.get(key)
    if (group) group.push(d)
    else byLog.set(key, [d])
  }
  await Promise.all(
    [...byLog].map(async ([key, group]) => {
      const last = await nextNumbers(store, key, group[0]!, group.length)
      group.forEach((d, i) => {
        d.logSeq = last - group.length + 1 + i
        d.logPage = logPageKey(d.environment, d.appDid, logPageNumber(d.logSeq))
      })
    }),
  )
}

async function nextNumbers(store: DeliveryLogStore, key: string, sample: DeliveryDoc, count: number): Promise<number> {
  const last = (await store.redis.eval(INCRBY_EXISTING, 1, key, count)) as number | null
  if (last !== null) return last
  // Rebuild from the database. Two processes rebuilding at once read the same highest number; SET NX keeps one.
  // Numbers given out but not yet written when Redis lost them may be given again: their deliveries share a page and
  // are ordered by time and id.
  const [highest] = (await store.models.Delivery.find({ appDid: sample.appDid, environment: sample.environment }, { logSeq: 1 })
    .sort({ logSeq: -1 })
    .limit(1)
    .lean()) as { logSeq?: number | null }[]
  await store.redis.set(key, highest?.logSeq ?? 0, 'NX')
  return store.redis.incrby(key, count)
}

/** The log's order: newest number first; deliveries stored before they were numbered last; then time and id. */
export const LOG_ORDER = { logSeq: -1, createdAt: -1, _id: -1 } as const

export function byLogOrder(a: DeliveryDoc, b: DeliveryDoc): number {
  return (
    (b.logSeq ?? -1) - (a.logSeq ?? -1) ||
    b.createdAt.getTime() - a.createdAt.getTime() ||
    (a._id < b._id ? 1 : a._id > b._id ? -1 : 0)
  )
}

/**
 * Pages a read may go through before it falls back to the full query. Unfiltered, pages are full unless repeated
 * events skipped numbers; with a status, a common one (delivered) fills the answer from the newest pages, and a rare
 * one (failed) is read more cheaply by the full query, which the database answers from its status index with the
 * few that match. The first pages read tell which.
 */
export const PAGE_BUDGET = 30

/**
 * The app environment's `limit` newest deliveries (of `status`, when given) read page by page, or null when the pages
 * cannot tell them: no counter (Redis lost it, or no Redis here), fewer numbered deliveries than asked (older ones
 * may be unnumbered), or too few (of that status) within PAGE_BUDGET pages: numbers skipped by repeated events, which
 * insert nothing, or a status rare in the newest pages. The caller then reads with the full query.
 */
export async function newestByPages(
  store: Partial<DeliveryLogStore> & Pick<DeliveryLogStore, 'models'>,
  appDid: string,
  environment: Environment,
  limit: number,
  status: DeliveryDoc['status'] | null = null,
): Promise<DeliveryDoc[] | null> {
  if (!store.redis || store.redisPrefix === undefined) return null
  // Redis away: the full query answers without it
  const counter = await store.redis.get(logCounterKey(store.redisPrefix, appDid, environment)).catch((err: unknown) => {
    if (isRedisUnavailable(err)) return null
    throw err
  })
  if (counter === null) return null
  let last = Number(counter)
  // fewer numbers given out than asked: a small log, read at once by the full query (which also finds unnumbered ones)
  if (!Number.isInteger(last) || last < limit) return null
  // a counter behind the numbers stored (Redis failed over to a replica that lagged): the pages above it would go
  // unread and new numbers repeat old ones; the full query answers, and the counter goes, to be rebuilt from the
  // highest number stored at the next write. Writers take their numbers before they insert, so a delivery on the next
  // page is also a writer that crossed into it since the counter was read: the counter, read again, has moved on.
  const counterKey = logCounterKey(store.redisPrefix, appDid, environment)
  for (let tries = 0; await store.models.Delivery.exists({ logPage: logPageKey(environment, appDid, logPageNumber(last) + 1) }); tries++) {
    const now = Number(await store.redis.get(counterKey))
    if (tries < 3 && Number.isInteger(now) && logPageNumber(now) > logPageNumber(last)) {
      last = now
      continue
    }
    await store.redis.eval(DEL_IF_EQUALS, 1, counterKey, String(now)).catch(() => undefined)
    return null
  }
  const found: DeliveryDoc[] = []
  let next = logPageNumber(last)
  let pagesRead = 0
  const read = async (pages: number) => {
    const numbers = Array.from({ length: Math.min(pages, next + 1) }, (_, i) => next - i)
    next -= numbers.length
    pagesRead += numbers.length
    const logPages = numbers.map((n) => logPageKey(environment, appDid, n))
    const docs = await Promise.all(logPages.map((logPage) => store.models.Delivery.find({ logPage }).lean() as Promise<DeliveryDoc[]>))
    // the key names the app environment; checked again, as every read of the domain filters on both. The status is
    // checked here, not in the query: given the page and a status most deliveries have, PostgreSQL combined the
    // page's index with the status's (nearly every row) and the read grew with the collection.
    found.push(...docs.flat().filter((d) => d.appDid === appDid && d.environment === environment && (!status || d.status === status)))
  }
  await read(Math.ceil(limit / LOG_PAGE_SIZE) + 1)
  // the pages still needed, judged by how many deliveries (of that status) the pages read held; beyond the budget,
  // or none found so far, the full query answers sooner
  while (found.length < limit && next >= 0) {
    const perPage = found.length / pagesRead
    const needed = perPage === 0 ? Infinity : Math.ceil(((limit - found.length) / perPage) * 1.25)
    if (pagesRead + needed > PAGE_BUDGET) return null
    await read(needed)
  }
  if (found.length < limit) return null
  return found.sort(byLogOrder).slice(0, limit)
}
