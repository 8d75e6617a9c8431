/**
 * findEach and deleteByIds (by-key.ts) on the real test database: they answer and delete exactly the keys asked, and
 * why they exist: FerretDB hands PostgreSQL a filter on one `_id` but reads the whole collection for `$in`.
 */
import mongoose, { Schema, type Connection } from 'mongoose'
import { isolate } from '@svc/testing'
import { deleteByIds, findEach } from '../src'

const { mongoUrl } = isolate('by-key')
let conn: Connection
const thingSchema = new Schema({ _id: String, kind: String })
// read by kind, as the service's models are by their indexed fields (every file checks its queries have an index)
thingSchema.index({ kind: 1 })
const Thing = () => conn.model<{ _id: string; kind: string }>('Thing', thingSchema)

beforeAll(async () => {
  conn = await mongoose.createConnection(mongoUrl).asPromise()
  await Thing().insertMany(['a', 'b', 'c', 'd'].map((_id) => ({ _id, kind: _id === 'd' ? 'kept' : 'spare' })))
})
afterAll(async () => {
  await conn.dropDatabase().catch(() => undefined)
  await conn.close()
})

it('findEach answers each distinct key found, once', async () => {
  const found = await findEach(['a', 'c', 'a', 'zz'], (_id) => Thing().findById(_id).lean())
  expect(found.map((t) => t._id).sort()).toEqual(['a', 'c'])
  const lists = await findEach(['spare', 'none'], (kind) => Thing().find({ kind }, { _id: 1 }).lean())
  expect(lists.map((t) => t._id).sort()).toEqual(['a', 'b', 'c'])
  expect(await findEach([], (_id: string) => Thing().findById(_id).lean())).toEqual([])
})

it('deleteByIds deletes exactly those ids that also match the filter, and counts them', async () => {
  expect(await deleteByIds(Thing(), [])).toBe(0)
  expect(await deleteByIds(Thing(), ['b', 'd', 'zz'], { kind: 'spare' })).toBe(1)
  expect((await Thing().find().lean()).map((t) => t._id).sort()).toEqual(['a', 'c', 'd'])
  expect(await deleteByIds(Thing(), ['a', 'a', 'd'])).toBe(2)
  expect((await Thing().find().lean()).map((t) => t._id)).toEqual(['c'])
})

it('FerretDB pushes one _id down to PostgreSQL, and not $in (the reason for both)', async () => {
  const explain = (filter: object) => Thing().collection.find(filter).explain() as Promise<{ filterPushdown?: boolean }>
  expect((await explain({ _id: 'c' })).filterPushdown).toBe(true)
  expect((await explain({ _id: { $in: ['c', 'x'] } })).filterPushdown).toBe(false)
})
