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
