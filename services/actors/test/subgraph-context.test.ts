/**
 * The actors subgraph is internal: a request straight to it (around the gateway) is refused with 401 unless it
 * carries a valid, unexpired context signed with the key of an issuer that may state its principal; and its AppAccess fields read only for the
 * app the access belongs to (or operators).
 */
import pino from 'pino'
import { CONTEXT_HEADER, type Principal } from '@svc/internal-context'
import { isolate, signedContext, testCallerKeys } from '@svc/testing'
import { MAX_DOCUMENT_TOKENS, type RunningSubgraph } from '@svc/subgraph-server'
import { startActorsService, upsertActor, type ActorsModels } from '../src'

const keys = testCallerKeys()
const APP = 'did:web:ctx-app.example.com'
const ACTOR = 'did:plc:ctxactor000000000000000'
let actors: RunningSubgraph & { models: ActorsModels }

interface Body {
  data?: any
  errors?: { message: string; extensions?: Record<string, unknown> }[]
}

async function post(query: string, context?: string): Promise<{ status: number; body: Body }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (context !== undefined) headers[CONTEXT_HEADER] = context
  const res = await fetch(actors.url, { method: 'POST', headers, body: JSON.stringify({ query }) })
  return { status: res.status, body: (await res.json()) as Body }
}

const ENTITY = (appDid = APP, environment = 'test') =>
  `{ _entities(representations: [{ __typename: "AppAccess", appDid: "${appDid}", environment: "${environment}" }]) {
      ... on AppAccess { payoutStatus(actor: "${ACTOR}") { actor payable status } }
  } }`
const OPERATOR_READ = `{ actor(did: "${ACTOR}", environment: "test") { did payoutStatus } }`
const signed = (principal: Principal) => signedContext(keys, principal)

function expectRefused(res: { status: number; body: Body }, reason: string) {
  expect(res.status).toBe(401)
  expect(res.body.data ?? null).toBeNull()
  expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED')
  expect(res.body.errors?.[0]?.message).toContain(`(${reason})`)
}

beforeAll(async () => {
  actors = await startActorsService({
    mongoUrl: isolate('actors_subgraph_context').mongoUrl,
    callerKeys: keys,
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
  })
  await upsertActor({ models: actors.models }, { did: ACTOR, environment: 'test', payoutStatus: 'ready' })
})

afterAll(async () => {
  await actors?.models.Actor.db.dropDatabase().catch(() => undefined)
  await actors?.stop()
})

test('a signed context of the app the access belongs to is answered', async () => {
  const res = await post(ENTITY(), signed({ kind: 'app', appDid: APP }))
  expect(res.status).toBe(200)
  expect(res.body).toEqual({ data: { _entities: [{ payoutStatus: { actor: ACTOR, payable: true, status: 'ready' } }] } })
})

test('no context, a forged one, or an expired one → 401, for entities, operator reads and the SDL', async () => {
  for (const query of [ENTITY(), OPERATOR_READ, '{ _service { sdl } }']) {
    expectRefused(await post(query), 'missing')
    expectRefused(await post(query, signedContext(testCallerKeys(), { kind: 'operator', id: 'x' })), 'bad-signature')
    expectRefused(await post(query, signedContext(keys, { kind: 'operator', id: 'x' }, { now: Date.now() - 3600_000 })), 'expired')
    expectRefused(await post(query, 'garbage'), 'malformed')
  }
})

test('another app’s access → AppUnauthorized; other principals → NotAllowed', async () => {
  const other = await post(ENTITY(), signed({ kind: 'app', appDid: 'did:web:other.example.com' }))
  expect(other.body.errors?.[0]?.extensions?.code).toBe('AppUnauthorized')
  const service = await post(ENTITY(), signed({ kind: 'service', name: 'events' }))
  expect(service.body.errors?.[0]?.extensions?.code).toBe('NotAllowed')
  const appReadingAsOperator = await post(OPERATOR_READ, signed({ kind: 'app', appDid: APP }))
  expect(appReadingAsOperator.body.errors?.[0]?.extensions?.code).toBe('NotAllowed')
})

test('operators may read', async () => {
  const res = await post(OPERATOR_READ, signed({ kind: 'operator', id: 'ops' }))
  expect(res.body).toEqual({ data: { actor: { did: ACTOR, payoutStatus: 'ready' } } })
  const entity = await post(ENTITY(), signed({ kind: 'operator', id: 'ops' }))
  expect(entity.body.data?._entities?.[0]?.payoutStatus?.status).toBe('ready')
})

test('an access representation with an environment other than test or live is refused', async () => {
  const res = await post(ENTITY(APP, 'prod'), signed({ kind: 'app', appDid: APP }))
  expect(res.body.errors?.[0]?.extensions?.code).toBe('InvalidRequest')
})

test('a signed caller cannot hold the subgraph in validation: a document over MAX_DOCUMENT_TOKENS is refused at parse; no introspection', async () => {
  const events = signed({ kind: 'service', name: 'events' })
  const long = await post(`{ ${'__typename '.repeat(20_000)}}`, events)
  expect(long.status).toBe(400)
  expect(long.body.errors?.[0]?.message).toMatch(new RegExp(`more th\\w+ ${MAX_DOCUMENT_TOKENS} tokens`))
  const fits = await post(`{ ${'__typename '.repeat(MAX_DOCUMENT_TOKENS - 10)}}`, events)
  expect(fits.body).toEqual({ data: { __typename: 'Query' } })
  const introspection = await post('{ __schema { types { name } } }', signed({ kind: 'operator', id: 'ops' }))
  expect(introspection.status).toBe(400)
  expect(introspection.body.errors?.[0]?.message).toMatch(/introspection is not allowed/i)
  // composition reads the SDL, which stays
  expect((await post('{ _service { sdl } }', events)).body.data?._service?.sdl).toContain('type ActorProfile')
})
