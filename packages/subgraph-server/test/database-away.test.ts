/**
 * A process that starts while its database is away (restarting: the fault run killed FerretDB while a worker
 * process started, and it exited on `read ECONNRESET`) waits for it: whileDatabaseAway runs a start-up step again on
 * the driver's network errors, for a bounded time, and on no other error; connectDomain makes its connection and
 * models that way, on the real test database.
 */
import mongoose from 'mongoose'
import { isolate } from '@svc/testing'
import { connectDomain, isDatabaseAway, whileDatabaseAway } from '../src'

const { MongoNetworkError, MongoServerSelectionError, MongoServerError } = mongoose.mongo

function recorder() {
  const warnings: string[] = []
  return { warnings, logger: { warn: (_obj: unknown, msg?: string) => void warnings.push(msg ?? '') } }
}

it('tells a database away (network, server selection) from a refusal it must report', () => {
  expect(isDatabaseAway(new MongoNetworkError('read ECONNRESET'))).toBe(true)
  expect(isDatabaseAway(new MongoServerSelectionError('connect ECONNREFUSED 127.0.0.1:27017', { type: 'Unknown', servers: new Map() } as never))).toBe(true)
  expect(isDatabaseAway(new MongoServerError({ message: 'E11000 duplicate key', code: 11000 }))).toBe(false)
  expect(isDatabaseAway(new Error('read ECONNRESET'))).toBe(false)
})

it('a first connection to a port where nothing listens (a database restarting) is a database away', async () => {
  const conn = mongoose.createConnection('mongodb://127.0.0.1:1/away', { serverSelectionTimeoutMS: 300 })
  const err = await conn.asPromise().then(
    () => null,
    (e: unknown) => e,
  )
  await conn.close().catch(() => undefined)
  expect((err as Error).name).toBe('MongooseServerSelectionError')
  expect(isDatabaseAway(err)).toBe(true)
})

it('runs a step again while the database is away, and says so', async () => {
  const { warnings, logger } = recorder()
  let calls = 0
  const value = await whileDatabaseAway(
    async () => {
      if (++calls < 3) throw new MongoNetworkError('read ECONNRESET')
      return 'ready'
    },
    { what: 'starting', logger },
  )
  expect(value).toBe('ready')
  expect(calls).toBe(3)
  expect(warnings).toEqual(['starting: the database is away; trying again', 'starting: the database is away; trying again'])
})

it('throws any other error at once, and a database still away after the wait', async () => {
  let calls = 0
  const refused = whileDatabaseAway(async () => {
    calls++
    throw new MongoServerError({ message: 'not authorized', code: 13 })
  }, { what: 'starting' })
  await expect(refused).rejects.toThrow('not authorized')
  expect(calls).toBe(1)

  const started = Date.now()
  calls = 0
  const away = whileDatabaseAway(async () => {
    calls++
    throw new MongoNetworkError('connect ECONNREFUSED')
  }, { what: 'starting', waitMs: 600 })
  await expect(away).rejects.toThrow('connect ECONNREFUSED')
  expect(calls).toBeGreaterThan(1)
  expect(Date.now() - started).toBeGreaterThanOrEqual(600)
})

it('connectDomain connects again when the database drops the connection while the models are made', async () => {
  const { mongoUrl } = isolate('database-away')
  const { warnings, logger } = recorder()
  const connections: mongoose.Connection[] = []
  const { conn, models } = await connectDomain(
    mongoUrl,
    async (c) => {
      connections.push(c)
      if (connections.length === 1) throw new MongoNetworkError('read ECONNRESET')
      return { answered: (await c.db!.admin().ping()).ok }
    },
    { logger },
  )
  try {
    expect(models).toEqual({ answered: 1 })
    expect(connections).toHaveLength(2)
    expect(connections[0]!.readyState).toBe(mongoose.ConnectionStates.disconnected) // the first one was closed
    expect(conn).toBe(connections[1])
    expect(warnings).toEqual(['connecting to the database: the database is away; trying again'])
  } finally {
    await conn.close()
  }
})
