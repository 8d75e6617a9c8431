/** The developer request log's retention, on the test FerretDB: entries older than 30 days go, the others stay. */
import type mongoose from 'mongoose'
import { isolate } from '@svc/testing'
import { connectApps, type AppsModels } from '../src'
import { pruneRequestLog, recordRequest, REQUEST_LOG_RETENTION_MS } from '../src/domain/request-log'

let conn: mongoose.Connection
let models: AppsModels

beforeAll(async () => {
  ;({ conn, models } = await connectApps(isolate('apps_request_log').mongoUrl))
})

afterAll(async () => {
  await conn?.dropDatabase().catch(() => undefined)
  await conn?.close()
})

const entry = (requestId: string) => ({ requestId, environment: null, appDid: null, method: 'GET', path: '/api/app/developer/config', status: 401, errorCode: 'Unauthorized', keyPrefix: null, durationMs: 2 })

test('entries older than the retention are deleted, newer ones kept', async () => {
  const now = new Date()
  await recordRequest({ models }, entry('req_recent'))
  // recorded 30 days and an hour ago (the log's createdAt is its own, so the document is written as stored)
  await models.RequestLog.collection.insertOne({ ...entry('req_old'), createdAt: new Date(now.getTime() - REQUEST_LOG_RETENTION_MS - 3_600_000) })
  expect(await pruneRequestLog({ models }, now)).toBe(1)
  expect((await models.RequestLog.find({}, { requestId: 1, _id: 0 }).lean()).map((e) => e.requestId)).toEqual(['req_recent'])
  expect(await pruneRequestLog({ models }, now)).toBe(0)
})
