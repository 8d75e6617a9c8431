/**
 * An actor's writers (the operator's create-creator and set-payout-status, the creator's test payout onboarding)
 * change different fields of one document. On FerretDB two overlapping updates keep only one of them, so each write
 * takes the actor's turn: run side by side, on the test FerretDB, none is lost.
 */
import { isolate } from '@svc/testing'
import { connectDomain } from '@svc/subgraph-server'
import type { Connection } from 'mongoose'
import { completeTestPayoutOnboarding, createActorsModels, lookupActor, setPayoutStatus, upsertActor, type ActorsModels } from '../src'

let conn: Connection
let models: ActorsModels
let seq = 0
const newDid = () => `did:plc:turns${++seq}${Date.now().toString(36)}`

beforeAll(async () => {
  ;({ conn, models } = await connectDomain(isolate('actors_turns').mongoUrl, createActorsModels))
})
afterAll(async () => {
  await conn?.dropDatabase().catch(() => undefined)
  await conn?.close()
})

test('a creator completing payout onboarding while the operator renames them: both changes stand, every round', async () => {
  for (let round = 0; round < 20; round++) {
    const did = newDid()
    await upsertActor({ models }, { did, environment: 'test' })
    await Promise.all([completeTestPayoutOnboarding({ models }, did, 'test'), upsertActor({ models }, { did, environment: 'test', displayName: `Name ${round}` })])
    const actor = await lookupActor({ models }, did, 'test')
    expect({ round, status: actor?.payoutStatus, name: actor?.displayName }).toEqual({ round, status: 'ready', name: `Name ${round}` })
  }
})

test('an operator restricting a creator while another changes its payment types: the restriction stands', async () => {
  for (let round = 0; round < 20; round++) {
    const did = newDid()
    await upsertActor({ models }, { did, environment: 'test', payoutStatus: 'ready' })
    await Promise.all([setPayoutStatus({ models }, { did, environment: 'test', status: 'restricted' }), upsertActor({ models }, { did, environment: 'test', paymentTypes: ['tip'] })])
    const actor = await lookupActor({ models }, did, 'test')
    expect({ round, status: actor?.payoutStatus, types: actor?.paymentTypes }).toEqual({ round, status: 'restricted', types: ['tip'] })
  }
})

test('10 parallel create-creators of one new DID (a retried command): one actor, every call answered with it', async () => {
  const did = newDid()
  const results = await Promise.all(Array.from({ length: 10 }, () => upsertActor({ models }, { did, environment: 'test', displayName: 'Bea' })))
  expect(new Set(results.map((r) => JSON.stringify([r.did, r.environment, r.displayName])))).toEqual(new Set([JSON.stringify([did, 'test', 'Bea'])]))
  expect(await models.Actor.countDocuments({ did, environment: 'test' })).toBe(1)
})

test('5 parallel test payout onboardings of one creator (a double submit): ready, one actor', async () => {
  const did = newDid()
  await upsertActor({ models }, { did, environment: 'test' })
  await Promise.all(Array.from({ length: 5 }, () => completeTestPayoutOnboarding({ models }, did, 'test')))
  expect((await lookupActor({ models }, did, 'test'))?.payoutStatus).toBe('ready')
  expect(await models.Actor.countDocuments({ did, environment: 'test' })).toBe(1)
})
