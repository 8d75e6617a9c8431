/**
 * Reads and deletes by a list of keys, one equality per key. FerretDB 1.x hands PostgreSQL only equality filters
 * (docs.ferretdb.io/pushdown): `{ _id: { $in: ids } }`, and `$or` of equalities, read every document of the
 * collection and filter them in FerretDB (1.2 s at 30,000 documents, growing with every event ever sold), where one
 * equality per key uses the index (about 1 ms each). On MongoDB both forms use the index.
 */
import type { Model, mongo } from 'mongoose'

/** What `find` answers for each distinct key, in parallel, as one list (keys found nowhere add nothing). */
export async function findEach<K, D>(keys: Iterable<K>, find: (key: K) => Promise<D | D[] | null>): Promise<D[]> {
  const found = await Promise.all([...new Set(keys)].map(find))
  return found.flatMap((d) => (d === null ? [] : Array.isArray(d) ? d : [d]))
}

/**
 * Deletes the documents with these `_id`s (and `filter`, when given) in one command of one delete statement per id;
 * answers how many were deleted.
 */
export async function deleteByIds(model: Pick<Model<unknown>, 'collection'>, ids: Iterable<string>, filter: Record<string, unknown> = {}): Promise<number> {
  const list = [...new Set(ids)]
  if (list.length === 0) return 0
  // the service's ids are strings (the driver's Document types them as ObjectIds)
  const collection = model.collection as unknown as mongo.Collection<{ _id: string }>
  const result = await collection.bulkWrite(
    list.map((_id) => ({ deleteOne: { filter: { ...filter, _id } } })),
    { ordered: false },
  )
  return result.deletedCount
}
