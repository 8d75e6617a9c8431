/**
 * Turns on the test FerretDB: writers of one key run one at a time, and a turn stays as long as a writer that read
 * the turn before it as the last could still try to insert it (so that writer meets it and waits, never holding a
 * turn at the same time as another).
 */
import mongoose, { type Connection } from 'mongoose'
import { isolate } from '@svc/testing'
import { createTurnModel, inTurn, type TurnModel } from '../src'

let conn: Connection
let turns: TurnModel

beforeAll(async () => {
  conn = await mongoose.createConnection(isolate('turns').mongoUrl).asPromise()
  turns = await createTurnModel(conn, 'ProbeTurn', 'probe_turns')
})
afterAll(async () => {
  await conn.dropDatabase().catch(() => undefined)
  await conn.close()
})

it('eight writers of one key at once run one at a time', async () => {
  let running = 0
  let most = 0
  await Promise.all(
    Array.from({ length: 8 }, () =>
      inTurn(turns, 'k-concurrent', async () => {
        most = Math.max(most, ++running)
        await new Promise((r) => setTimeout(r, 20))
        running--
      }),
    ),
  )
  expect(most).toBe(1)
})

it('recent turns are kept: a writer that read turn 1 as the last and stalled meets turn 2 at its insert', async () => {
  for (let i = 0; i < 4; i++) await inTurn(turns, 'k-history', async () => undefined)
  // what the stalled writer would insert now
  await expect(turns.create({ _id: 'k-history#2', key: 'k-history', n: 2, expiresAt: new Date() })).rejects.toMatchObject({ code: 11000 })
})
