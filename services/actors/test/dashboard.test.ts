/**
 * The actors subgraph for the creator dashboard, over HTTP with a gateway-signed context: dashboardActor,
 * completeTestPayoutOnboarding (test only), and ActorProfile as an entity other subgraphs point at by DID and
 * environment.
 */
import pino from 'pino'
import { CONTEXT_HEADER, type Principal } from '@svc/internal-context'
import { isolate, signedContext, testCallerKeys } from '@svc/testing'
import type { RunningSubgraph } from '@svc/subgraph-server'
import { ContractError } from '@svc/errors'
import { completeTestPayoutOnboarding, lookupActor, startActorsService, upsertActor, type ActorsModels } from '../src'

const keys = testCallerKeys()
let actors: RunningSubgraph & { models: ActorsModels }
let seq = 0
const newDid = () => `did:plc:dash${++seq}${Date.now().toString(36)}`

interface Body {
  data?: any
  errors?: { message: string; extensions?: Record<string, unknown> }[]
}

async function gql(principal: Principal, query: string): Promise<Body> {
  const res = await fetch(actors.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [CONTEXT_HEADER]: signedContext(keys, principal) },
    body: JSON.stringify({ query }),
  })
  return (await res.json()) as Body
}

const dashboard = (actorDid: string, environment: 'test' | 'live' = 'test'): Principal => ({ kind: 'dashboard', actorDid, environment, sessionId: 'sess_1' })
const others: Principal[] = [
  { kind: 'app', appDid: 'did:web:app.example.com' },
  { kind: 'operator', id: 'ops' },
  { kind: 'service', name: 'xrpc-adapter' },
  { kind: 'apiKey', keyHash: 'f'.repeat(64) },
]
const codeOf = (body: Body) => body.errors?.[0]?.extensions?.code
const ME = '{ dashboardActor { did environment kind displayName payable payoutStatus paymentTypes createdAt } }'
const ONBOARD = 'mutation { completeTestPayoutOnboarding { did environment payable payoutStatus } }'
const ENTITY = (did: string, environment: string) =>
  `{ _entities(representations: [{ __typename: "ActorProfile", did: "${did}", environment: "${environment}" }]) { ... on ActorProfile { did environment payoutStatus payable } } }`

beforeAll(async () => {
  actors = await startActorsService({
    mongoUrl: isolate('actors_dashboard').mongoUrl,
    callerKeys: keys,
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
  })
})

afterAll(async () => {
  await actors?.models.Actor.db.dropDatabase().catch(() => undefined)
  await actors?.stop()
})

describe('dashboardActor', () => {
  test("the signed-in creator's actor in the session's environment; null when it has none there", async () => {
    const did = newDid()
    await upsertActor({ models: actors.models }, { did, environment: 'test', displayName: 'Ada' })
    expect(await gql(dashboard(did), ME)).toEqual({
      data: {
        dashboardActor: {
          did,
          environment: 'test',
          kind: 'creator',
          displayName: 'Ada',
          payable: false,
          payoutStatus: 'onboarding-required',
          paymentTypes: ['tip', 'shop'],
          createdAt: expect.any(String),
        },
      },
    })
    expect(await gql(dashboard(did, 'live'), ME)).toEqual({ data: { dashboardActor: null } })
    expect(await gql(dashboard(newDid()), ME)).toEqual({ data: { dashboardActor: null } })
  })

  test('any other principal → NotAllowed', async () => {
    for (const p of others) expect(codeOf(await gql(p, ME))).toBe('NotAllowed')
  })

  test('a display name (shown to buyers on the checkout page) with control or bidirectional override characters is refused, and nothing is written', async () => {
    const did = newDid()
    for (const displayName of ['Ada\u0007', 'Ada \u202eevil']) {
      await expect(upsertActor({ models: actors.models }, { did, environment: 'test', displayName })).rejects.toThrow(/control characters/)
    }
    expect(await actors.models.Actor.countDocuments({ did })).toBe(0)
  })
})

describe('completeTestPayoutOnboarding', () => {
  test('test: the payout account becomes ready (payable); repeating it is harmless', async () => {
    const did = newDid()
    await upsertActor({ models: actors.models }, { did, environment: 'test' })
    await upsertActor({ models: actors.models }, { did, environment: 'live' })
    const res = await gql(dashboard(did), ONBOARD)
    expect(res).toEqual({ data: { completeTestPayoutOnboarding: { did, environment: 'test', payable: true, payoutStatus: 'ready' } } })
    expect((await gql(dashboard(did), ONBOARD)).data.completeTestPayoutOnboarding.payoutStatus).toBe('ready')
    // the live actor of the same DID is untouched
    expect((await lookupActor({ models: actors.models }, did, 'live'))?.payoutStatus).toBe('onboarding-required')
  })

  test('live → NotAllowed (the live processor is not configured), nothing changes', async () => {
    const did = newDid()
    await upsertActor({ models: actors.models }, { did, environment: 'live' })
    const res = await gql(dashboard(did, 'live'), ONBOARD)
    expect(codeOf(res)).toBe('NotAllowed')
    expect(res.errors?.[0]?.message).toBe('payout onboarding in live goes through the live processor, which is not configured')
    expect((await lookupActor({ models: actors.models }, did, 'live'))?.payoutStatus).toBe('onboarding-required')
  })

  test('no actor in the environment → ActorNotFound, nothing is created', async () => {
    const did = newDid()
    expect(codeOf(await gql(dashboard(did), ONBOARD))).toBe('ActorNotFound')
    expect(await actors.models.Actor.countDocuments({ did })).toBe(0)
    await expect(completeTestPayoutOnboarding({ models: actors.models }, did, 'test')).rejects.toBeInstanceOf(ContractError)
  })

  test('any other principal → NotAllowed, nothing changes', async () => {
    const did = newDid()
    await upsertActor({ models: actors.models }, { did, environment: 'test' })
    for (const p of others) expect(codeOf(await gql(p, ONBOARD))).toBe('NotAllowed')
    expect((await lookupActor({ models: actors.models }, did, 'test'))?.payoutStatus).toBe('onboarding-required')
  })
})

describe('ActorProfile entity', () => {
  test('resolves the actor of a DID in an environment, or null', async () => {
    const did = newDid()
    await upsertActor({ models: actors.models }, { did, environment: 'test', payoutStatus: 'ready' })
    const app: Principal = { kind: 'app', appDid: 'did:web:app.example.com' }
    expect((await gql(app, ENTITY(did, 'test'))).data._entities).toEqual([{ did, environment: 'test', payoutStatus: 'ready', payable: true }])
    expect((await gql(app, ENTITY(did, 'live'))).data._entities).toEqual([null])
    expect((await gql(app, ENTITY(newDid(), 'test'))).data._entities).toEqual([null])
    expect((await gql(app, ENTITY(did, 'prod'))).data._entities).toEqual([null])
  })

  test('apps and operators read any actor; a dashboard session only its own creator; others NotAllowed', async () => {
    const did = newDid()
    await upsertActor({ models: actors.models }, { did, environment: 'test' })
    expect((await gql({ kind: 'operator', id: 'ops' }, ENTITY(did, 'test'))).data._entities[0].did).toBe(did)
    expect((await gql(dashboard(did), ENTITY(did, 'test'))).data._entities[0].did).toBe(did)
    expect(codeOf(await gql(dashboard(did, 'live'), ENTITY(did, 'test')))).toBe('NotAllowed')
    // another creator's session, same environment: the profile and payout status stay its own
    expect(codeOf(await gql(dashboard(newDid()), ENTITY(did, 'test')))).toBe('NotAllowed')
    expect(codeOf(await gql({ kind: 'service', name: 'events' }, ENTITY(did, 'test')))).toBe('NotAllowed')
  })
})
