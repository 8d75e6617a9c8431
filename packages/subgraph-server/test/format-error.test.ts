/**
 * How a subgraph answers a resolver's error: a database that cannot be reached is 503 ServiceUnavailable (retry), any
 * other unexpected error a masked 500. The database errors are the driver's own, from a real FerretDB stopped mid-way.
 */
import mongoose from 'mongoose'
import { ContractError } from '@svc/errors'
import { startFerretDb, startFerretDbWithoutBackend } from '@svc/testing'
import { formatSubgraphError, isDatabaseAway, isDatabaseUnreachable } from '../src'

const format = formatSubgraphError()
const formatted = { message: 'raw', path: ['checkout'] }

it('a database that stopped answering is ServiceUnavailable, for reads and writes', async () => {
  const ferret = await startFerretDb()
  const conn = await mongoose.createConnection(`${ferret.url}format_error`, { serverSelectionTimeoutMS: 1000 }).asPromise()
  try {
    await conn.collection('things').insertOne({ n: 1 })
    await ferret.stop('SIGKILL')
    const errors = await Promise.all([
      conn.collection('things').findOne({ n: 1 }).catch((err: unknown) => err),
      conn.collection('things').insertOne({ n: 2 }).catch((err: unknown) => err),
    ])
    for (const err of errors) {
      expect(isDatabaseUnreachable(err)).toBe(true)
      expect(format(formatted, err)).toEqual({
        message: 'the service is briefly unavailable; retry with backoff',
        path: ['checkout'],
        extensions: { code: 'ServiceUnavailable', http: { status: 503 } },
      })
    }
  } finally {
    await conn.close(true)
    await ferret.stop()
  }
})

it('a FerretDB whose PostgreSQL cannot be reached is ServiceUnavailable too (and away, for a process starting)', async () => {
  // FerretDB answers the driver itself here, with an InternalError carrying the PostgreSQL driver's message
  const ferret = await startFerretDbWithoutBackend()
  const conn = mongoose.createConnection(`${ferret.url}format_error`, { serverSelectionTimeoutMS: 5000 })
  try {
    await conn.asPromise()
    const errors = await Promise.all([
      conn.collection('things').findOne({ n: 1 }).catch((err: unknown) => err),
      conn.collection('things').insertOne({ n: 2 }).catch((err: unknown) => err),
      conn.collection('things').insertMany([{ n: 3 }, { n: 4 }], { ordered: false }).catch((err: unknown) => err),
    ])
    expect(errors.map((err) => (err as Error).name)).toEqual(['MongoServerError', 'MongoServerError', 'MongoBulkWriteError'])
    for (const err of errors) {
      expect(err).toMatchObject({ code: 1 })
      expect(isDatabaseUnreachable(err)).toBe(true)
      expect(isDatabaseAway(err)).toBe(true)
      expect(format(formatted, err)).toMatchObject({ extensions: { code: 'ServiceUnavailable', http: { status: 503 } } })
    }
  } finally {
    await conn.close(true)
    await ferret.stop()
  }
})

it('an insertMany whose connection closed under it is ServiceUnavailable: the bulk error wraps the network error', () => {
  // the driver's own shape (seen in the fault run when FerretDB was killed during a ticket hold's settlement)
  const closed = new mongoose.mongo.MongoBulkWriteError(new mongoose.mongo.MongoNetworkError('connection 1 to 127.0.0.1:27017 closed'), {} as never)
  expect(isDatabaseUnreachable(closed)).toBe(true)
  expect(isDatabaseAway(closed)).toBe(true)
  expect(format(formatted, closed)).toMatchObject({ extensions: { code: 'ServiceUnavailable', http: { status: 503 } } })
  // a bulk error of the server's own (a duplicate key) is not
  const duplicate = new mongoose.mongo.MongoBulkWriteError({ message: 'E11000 duplicate key', code: 11000 }, {} as never)
  expect(isDatabaseUnreachable(duplicate)).toBe(false)
})

it('a replica set electing a new primary (MongoDB) is ServiceUnavailable, and away for a process starting', () => {
  const { MongoServerError, MongoBulkWriteError } = mongoose.mongo
  const electing = [
    new MongoServerError({ message: 'not primary', code: 10107 }), // NotWritablePrimary
    new MongoServerError({ message: 'operation was interrupted because of a replication state change', code: 11602 }),
    new MongoServerError({ message: 'PrimarySteppedDown', code: 189 }),
    new MongoServerError({ message: 'interrupted at shutdown', code: 11600 }),
    // the label alone (the server sets it on what a retry may pass)
    new MongoServerError({ message: 'write concern', code: 64, errorLabels: ['RetryableWriteError'] }),
    // an updateMany or insertMany cut by the stepdown
    new MongoBulkWriteError({ message: 'not primary', code: 10107 }, {} as never),
  ]
  for (const err of electing) {
    expect([err.message, isDatabaseUnreachable(err), isDatabaseAway(err)]).toEqual([err.message, true, true])
    expect(format(formatted, err)).toMatchObject({ extensions: { code: 'ServiceUnavailable', http: { status: 503 } } })
  }
  // the server's other answers are not the database being away
  for (const err of [new MongoServerError({ message: 'E11000 duplicate key', code: 11000 }), new MongoServerError({ message: 'WriteConflict', code: 112 })]) {
    expect([isDatabaseUnreachable(err), isDatabaseAway(err)]).toEqual([false, false])
  }
})

it('a write on a socket the database already closed (Node\'s own EPIPE, let through by the driver) is ServiceUnavailable too', () => {
  const ended = Object.assign(new Error('This socket has been ended by the other party'), { code: 'EPIPE' })
  expect(isDatabaseUnreachable(ended)).toBe(true)
  expect(isDatabaseUnreachable(Object.assign(new Error('no such file'), { code: 'ENOENT' }))).toBe(false)
})

it("a model's operation that waited in vain for the connection to come back is ServiceUnavailable too", () => {
  const timedOut = new mongoose.Error('Operation `checkouts.findOne()` buffering timed out after 10000ms')
  expect(format(formatted, timedOut)).toMatchObject({ extensions: { code: 'ServiceUnavailable' } })
  expect(isDatabaseUnreachable(new mongoose.Error('Cast to ObjectId failed'))).toBe(false)
})

it('a contract error keeps its code; anything else is a masked InternalServerError', () => {
  expect(format(formatted, new ContractError('CheckoutClosed', 'closed'))).toMatchObject({ message: 'closed', extensions: { code: 'CheckoutClosed' } })
  expect(isDatabaseUnreachable(new TypeError('x is undefined'))).toBe(false)
  expect(format(formatted, new TypeError('x is undefined'))).toEqual({ message: 'internal error', path: ['checkout'], extensions: { code: 'InternalServerError', http: { status: 500 } } })
})

it('a Redis that cannot take commands now (a replica in a failover, a restart) is ServiceUnavailable, not a 500', () => {
  // the shapes ioredis rejects with: its ReplyError for a busy server, its MaxRetriesPerRequestError while reconnecting
  const busy = Object.assign(new Error("READONLY You can't write against a read only replica."), { name: 'ReplyError' })
  const loading = Object.assign(new Error('LOADING Redis is loading the dataset in memory'), { name: 'ReplyError' })
  const reconnecting = Object.assign(new Error('Reached the max retries per request limit (which is 20).'), { name: 'MaxRetriesPerRequestError' })
  for (const err of [busy, loading, reconnecting]) {
    expect(format(formatted, err)).toMatchObject({ extensions: { code: 'ServiceUnavailable', http: { status: 503 } } })
  }
  // a script's own error is no outage
  const wrong = Object.assign(new Error('ERR wrong number of arguments'), { name: 'ReplyError' })
  expect(format(formatted, wrong)).toMatchObject({ extensions: { code: 'InternalServerError' } })
})

it('a FerretDB on SQLite whose database file is locked by another writer is ServiceUnavailable (its answer, as seen in a fault run)', () => {
  const locked = Object.assign(
    new Error('[msg_update.go:133 handler.(*Handler).updateDocument] [update.go:114 common.UpdateDocument] [collection.go:191 sqlite.(*collection).UpdateAll] database is locked (5) (SQLITE_BUSY)'),
    { name: 'MongoServerError', code: 1 },
  )
  expect(isDatabaseUnreachable(locked)).toBe(true)
  expect(format(formatted, locked)).toMatchObject({ extensions: { code: 'ServiceUnavailable', http: { status: 503 } } })
})
