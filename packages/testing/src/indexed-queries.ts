/**
 * Every query the service's own code sends is served by an index on MongoDB. FerretDB cannot show a missing one: the
 * test setup gives every indexed field its own GIN index (src/ferretdb.ts), so a filter on any field of any index is
 * fast here, while MongoDB uses an index only for a filter on its first key (a prefix) and scans the collection
 * otherwise. So each test file records the filters that code outside the tests sends through a model (mongoose's
 * debug hook), and fails when one names no first key of the model's indexes (nor `_id`): in each `$or` branch, or in
 * one `$and` branch; a filter that names none is served when its sort's first key is one. Queries a test makes itself (its assertions, its set-up) are not the service's and are left out.
 *
 * And every such query is one FerretDB hands to PostgreSQL: FerretDB 1.24 pushes down only a top-level equality on a
 * string, boolean, date or number (docs.ferretdb.io/pushdown); a filter without one (`{ _id: { $in } }`, an `$or`, a
 * range alone) reads and decodes the whole collection in FerretDB, seconds at tens of thousands of documents, however
 * well MongoDB would serve it. The few such reads that are meant (a sweep over a collection kept small) are listed in
 * SCANS_MEANT, each with why.
 */
import mongoose from 'mongoose'
import { relative, resolve } from 'node:path'

const ROOT = resolve(__dirname, '..', '..', '..')
/** what only writes (no filter), or manages the collection */
const UNFILTERED = new Set(['insertOne', 'insertMany', 'bulkWrite', 'createIndex', 'createIndexes', 'listIndexes', 'dropIndex', 'drop', 'aggregate', 'watch'])

interface Unindexed {
  collection: string
  method: string
  filter: string
  from: string
}
const unindexed = new Map<string, Unindexed>()
const scans = new Map<string, Unindexed>()

/** Reads FerretDB answers by reading the whole collection, on purpose: `<collection>.<method> <shape>` → why. */
export const SCANS_MEANT: Record<string, string> = {
  'request_log.deleteMany {"createdAt":"$lt"}': 'the request log\'s retention prune, once an hour in the apps process',
  'request_log.find {}': 'an operator\'s read of the whole log, newest first (requestLog naming no environment or app)',
  'signing_secrets.findOne {}': 'the first secret of an app environment checks the key against any stored one, once',
  ...Object.fromEntries(
    ['apps', 'payments', 'tickets'].flatMap((domain) =>
      ['{"relayed":"$exists","relayedAt":"="}', '{"relayed":"$exists"}'].map((shape) => [`${domain}_outbox.updateMany ${shape}`, 'once per relay start: events written before the relayed flag existed']),
    ),
  ),
}

const isScalar = (v: unknown): boolean =>
  typeof v === 'string' || typeof v === 'boolean' || typeof v === 'number' || v instanceof Date || (v !== null && typeof v === 'object' && (v as { _bsontype?: unknown })._bsontype === 'ObjectId')

/** Whether FerretDB 1.24 hands PostgreSQL part of this filter: a top-level field equal to a scalar (or `$eq` one). */
function pushedDown(filter: Record<string, unknown>): boolean {
  return Object.entries(filter).some(([k, v]) => {
    if (k.startsWith('$')) return false
    if (isScalar(v)) return true
    return v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1 && '$eq' in v && isScalar((v as { $eq: unknown }).$eq)
  })
}

/** The innermost frame of this repository outside node_modules and this file: where the query was sent from. */
function sender(): string | null {
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 60
  const stack = new Error().stack ?? ''
  Error.stackTraceLimit = limit
  for (const line of stack.split('\n').slice(1)) {
    const m = /\(?((?:file:\/\/)?\/[^():]+):\d+:\d+\)?$/.exec(line)
    if (!m) continue
    const path = m[1]!.replace(/^file:\/\//, '')
    if (!path.startsWith(ROOT + '/') || path.includes('/node_modules/') || path === __filename) continue
    return relative(ROOT, path)
  }
  return null
}

const isTestCode = (file: string) => file.startsWith('test/') || file.startsWith('packages/testing/') || /(^|\/)test\//.test(file) || file.startsWith('scripts/')

/** Whether an index whose first key is one of `fields` exists. */
function served(filter: Record<string, unknown>, firstKeys: Set<string>): boolean {
  const fields = Object.keys(filter).filter((k) => !k.startsWith('$'))
  if (fields.some((f) => firstKeys.has(f))) return true
  const or = filter.$or as Record<string, unknown>[] | undefined
  if (Array.isArray(or) && or.length > 0 && or.every((branch) => served(branch, firstKeys))) return true
  const and = filter.$and as Record<string, unknown>[] | undefined
  return Array.isArray(and) && and.some((branch) => served(branch, firstKeys))
}

/** A filter's shape: its fields and operators, never its values. */
function shape(filter: unknown): unknown {
  if (Array.isArray(filter)) return filter.map(shape)
  if (filter === null || typeof filter !== 'object' || filter instanceof Date) return '…'
  return Object.fromEntries(
    Object.entries(filter as Record<string, unknown>).map(([k, v]) => {
      if (k === '$or' || k === '$and') return [k, shape(v)]
      const operators = v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Date) ? Object.keys(v).filter((o) => o.startsWith('$')) : []
      return [k, operators.length > 0 ? operators.join(',') : '=']
    }),
  )
}

const firstKeysCache = new WeakMap<object, Set<string>>()
/** `_id` and the first key of each index the model declares (the schema walks its paths for them: kept). */
function firstKeysOf(model: mongoose.Model<unknown>): Set<string> {
  let keys = firstKeysCache.get(model)
  if (!keys) firstKeysCache.set(model, (keys = new Set(['_id', ...model.schema.indexes().map(([fields]) => Object.keys(fields)[0]!)])))
  return keys
}

export function recordQuery(this: { conn?: mongoose.Connection; modelName?: string }, collection: string, method: string, ...args: unknown[]): void {
  if (UNFILTERED.has(method)) return
  const filter = args[0]
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) return
  const model = Object.values(this.conn?.models ?? {}).find((m) => m.collection.collectionName === collection)
  if (!model) return // a collection no model declares (its indexes are not the service's)
  const firstKeys = firstKeysOf(model)
  if (!pushedDown(filter as Record<string, unknown>)) {
    const from = sender()
    const key = `${collection}.${method} ${JSON.stringify(shape(filter))}`
    if (from !== null && !isTestCode(from) && !(key in SCANS_MEANT) && !scans.has(key)) scans.set(key, { collection, method, filter: JSON.stringify(shape(filter)), from })
  }
  if (served(filter as Record<string, unknown>, firstKeys)) return
  // no field of the filter is a first key, but the sort's is: the index is walked in order (newest first, say)
  const sort = (args.slice(1).find((a) => a !== null && typeof a === 'object' && 'sort' in a) as { sort?: unknown } | undefined)?.sort
  if (sort !== null && typeof sort === 'object' && firstKeys.has(Object.keys(sort)[0] ?? '')) return
  const from = sender()
  if (from === null || isTestCode(from)) return
  const key = `${collection}.${method} ${JSON.stringify(shape(filter))}`
  if (!unindexed.has(key)) unindexed.set(key, { collection, method, filter: JSON.stringify(shape(filter)), from })
}

mongoose.set('debug', recordQuery)

afterAll(() => {
  mongoose.set('debug', false)
  const found = [...unindexed.values()]
  unindexed.clear()
  const scanned = [...scans.values()]
  scans.clear()
  const problems = [
    ...(found.length > 0 ? [`queries that no index serves on MongoDB (add an index whose first key the filter names):\n${found.map((q) => `  ${q.collection}.${q.method} ${q.filter} from ${q.from}`).join('\n')}`] : []),
    ...(scanned.length > 0
      ? [`queries FerretDB answers by reading the whole collection (name a field equal to a value, or read by each key: findEach in @svc/subgraph-server):\n${scanned.map((q) => `  ${q.collection}.${q.method} ${q.filter} from ${q.from}`).join('\n')}`]
      : []),
  ]
  if (problems.length > 0) throw new Error(problems.join('\n'))
})
