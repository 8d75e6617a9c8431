/**
 * The apps subgraph is internal: a request straight to it (around the gateway) is refused with 401
 * unless it carries a valid, unexpired context signed with the key of an issuer that may state its principal.
 */
import { createHmac, randomBytes } from 'node:crypto'
import pino from 'pino'
import { CONTEXT_HEADER, signContext, type Principal } from '@svc/internal-context'
import { isolate, signedContext, testCallerKeys } from '@svc/testing'
import { registerApp, requestRecipientApproval, startAppsService, type AppsModels } from '../src'
import type { RunningSubgraph } from '@svc/subgraph-server'

const keys = testCallerKeys()
const DID = 'did:web:ctx-app.example.com'
const operator: Principal = { kind: 'operator', id: 'ops' }
let apps: RunningSubgraph & { models: AppsModels }

interface Body {
  data?: unknown
  errors?: { message: string; extensions?: Record<string, unknown> }[]
}

async function post(query: string, context?: string, variables?: Record<string, unknown>): Promise<{ status: number; body: Body }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (context !== undefined) headers[CONTEXT_HEADER] = context
  const res = await fetch(apps.url, { method: 'POST', headers, body: JSON.stringify({ query, variables }) })
  return { status: res.status, body: (await res.json()) as Body }
}

const APP_QUERY = `{ app(did: "${DID}") { did name } }`
const good = (principal: Principal = operator) => signedContext(keys, principal)

function expectRefused(res: { status: number; body: Body }, reason: string) {
  expect(res.status).toBe(401)
  expect(res.body.data ?? null).toBeNull()
  expect(res.body.errors).toHaveLength(1)
  expect(res.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED')
  expect(res.body.errors?.[0]?.message).toContain(`(${reason})`)
}

beforeAll(async () => {
  apps = await startAppsService({
    mongoUrl: isolate('apps_subgraph_context').mongoUrl,
    callerKeys: keys,
    // nothing listens there: these tests reach no operation that reads another domain
    gatewayUrl: 'http://127.0.0.1:1/graphql',
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
    allowLoopbackWebhooksInTest: false,
    dashboardUrl: 'http://127.0.0.1:4001/dashboard',
  })
  await registerApp({ models: apps.models }, { did: DID, environment: 'test', appUrl: 'https://ctx-app.example.com', feeShareBps: 0, name: 'Ctx' })
})

afterAll(async () => {
  await apps?.models.App.db.dropDatabase().catch(() => undefined)
  await apps?.stop()
})

test('a correctly signed context is answered', async () => {
  const res = await post(APP_QUERY, good())
  expect(res.status).toBe(200)
  expect(res.body).toEqual({ data: { app: { did: DID, name: 'Ctx' } } })
})

test('the principal in the context is the one the resolvers see', async () => {
  const res = await post('{ appConfig(environment: "test") { appDid appUrl } }', good({ kind: 'app', appDid: DID }))
  expect(res.body).toEqual({ data: { appConfig: { appDid: DID, appUrl: 'https://ctx-app.example.com' } } })
})

test('an App entity is resolved for an operator and for the app itself, never for another app or a creator', async () => {
  const other = 'did:web:ctx-other.example.com'
  await registerApp({ models: apps.models }, { did: other, environment: 'test', appUrl: 'https://ctx-other.example.com', feeShareBps: 0, name: 'Other' })
  const entity = (principal: Principal, did: unknown) =>
    post('query($r: [_Any!]!) { _entities(representations: $r) { ... on App { did name } } }', good(principal), { r: [{ __typename: 'App', did }] })
  const codeOf = (res: { body: Body }) => res.body.errors?.[0]?.extensions?.code
  const creator: Principal = { kind: 'dashboard', actorDid: 'did:plc:creator', environment: 'test', sessionId: 's' }
  expect((await entity(operator, other)).body.data).toEqual({ _entities: [{ did: other, name: 'Other' }] })
  expect((await entity({ kind: 'app', appDid: DID }, DID)).body.data).toEqual({ _entities: [{ did: DID, name: 'Ctx' }] })
  expect(codeOf(await entity({ kind: 'app', appDid: DID }, other))).toBe('NotAllowed')
  expect(codeOf(await entity(creator, DID))).toBe('NotAllowed')
  // a query operator in the representation reads nothing (it would walk the registered apps)
  expect((await entity(operator, { $gt: '' })).body.data).toEqual({ _entities: [null] })
})

test('AppAccess, ActorProfile and RecipientApproval entities take their keys only as strings: a query operator reads nothing', async () => {
  const entities = (representation: Record<string, unknown>, selection: string) =>
    post(`query($r: [_Any!]!) { _entities(representations: $r) { ${selection} } }`, good(operator), { r: [representation] })
  const walk = { $ne: null }
  expect((await entities({ __typename: 'AppAccess', appDid: walk, environment: 'test' }, '... on AppAccess { config { appUrl } }')).body.data).toEqual({ _entities: [null] })
  expect((await entities({ __typename: 'AppAccess', appDid: DID, environment: walk }, '... on AppAccess { config { appUrl } }')).body.data).toEqual({ _entities: [null] })
  expect((await entities({ __typename: 'ActorProfile', did: walk, environment: 'test' }, '... on ActorProfile { recipientApprovals { id } }')).body.data).toEqual({ _entities: [null] })
  expect((await entities({ __typename: 'RecipientApproval', id: walk }, '... on RecipientApproval { id }')).body.data).toEqual({ _entities: [null] })
})

test('a RecipientApproval entity is read by its app, never by another caller, whether or not the id exists', async () => {
  const approval = await requestRecipientApproval({ models: apps.models, facts: { actor: async (did) => ({ did, payoutStatus: 'ready' }) } }, DID, {
    environment: 'test',
    recipientDid: 'did:plc:ctxcreator',
    paymentTypes: ['tip'],
  })
  const entity = (principal: Principal, id: string) =>
    post('query($r: [_Any!]!) { _entities(representations: $r) { ... on RecipientApproval { id } } }', good(principal), { r: [{ __typename: 'RecipientApproval', id }] })
  expect((await entity({ kind: 'app', appDid: DID }, approval.id)).body.data).toEqual({ _entities: [{ id: approval.id }] })
  const service: Principal = { kind: 'service', name: 'events' }
  const [existing, missing] = [await entity(service, approval.id), await entity(service, 'apr_0000000000000000')]
  expect(existing.body.errors?.[0]?.extensions?.code).toBe('NotAllowed')
  expect({ data: missing.body.data, errors: missing.body.errors?.map((e) => [e.message, e.extensions?.code]) }).toEqual({
    data: existing.body.data,
    errors: existing.body.errors?.map((e) => [e.message, e.extensions?.code]),
  })
})

test('(a) no svc-context header → 401', async () => {
  expectRefused(await post(APP_QUERY), 'missing')
  expectRefused(await post(APP_QUERY, ''), 'missing')
})

test('(b) a context signed with another key → 401', async () => {
  const forged = signContext({ issuer: 'gateway', key: randomBytes(32).toString('hex') }, { principal: operator, requestId: 'forged' })
  expectRefused(await post(APP_QUERY, forged), 'bad-signature')
})

test('(b) a context whose body was changed after signing → 401', async () => {
  const [issuer, , sig] = good({ kind: 'app', appDid: DID }).split('.')
  const body = Buffer.from(JSON.stringify({ principal: { kind: 'app', appDid: 'did:web:other.example.com' }, requestId: 'x', exp: Math.floor(Date.now() / 1000) + 60 })).toString('base64url')
  expectRefused(await post(APP_QUERY, `${issuer}.${body}.${sig}`), 'bad-signature')
})

test('(b) a process stating a principal it may not (the events workers as an app) → 401', async () => {
  const body = Buffer.from(JSON.stringify({ principal: { kind: 'app', appDid: DID }, requestId: 'x', exp: Math.floor(Date.now() / 1000) + 60 })).toString('base64url')
  const sig = createHmac('sha256', keys.events).update(`events.${body}`).digest('base64url')
  expectRefused(await post(APP_QUERY, `events.${body}.${sig}`), 'not-allowed')
})

test('(c) an expired context → 401', async () => {
  const old = signedContext(keys, operator, { now: Date.now() - 60 * 60 * 1000 })
  expectRefused(await post(APP_QUERY, old), 'expired')
})

test.each([
  ['garbage', 'not-a-context'],
  ['two parts', 'gateway.abc'],
  ['an empty signature', `gateway.${Buffer.from('{}').toString('base64url')}.`],
  ['an empty body', 'gateway..abc'],
])('(d) a malformed header (%s) → 401', async (_label, header) => {
  expectRefused(await post(APP_QUERY, header), 'malformed')
})

test('federation fields are refused without a context too', async () => {
  expectRefused(await post('{ _service { sdl } }'), 'missing')
  expectRefused(await post(`{ _entities(representations: [{ __typename: "App", did: "${DID}" }]) { ... on App { did createdAt } } }`), 'missing')
})

test('mutations are refused without a valid context and change nothing', async () => {
  const mutation = `mutation { recordDeveloperRequest(input: { requestId: "sneaky", method: "GET", path: "/", status: 200, durationMs: 1 }) }`
  expectRefused(await post(mutation), 'missing')
  expectRefused(await post(mutation, signContext({ issuer: 'xrpc-adapter', key: 'other-key' }, { principal: { kind: 'service', name: 'xrpc-adapter' }, requestId: 'r' })), 'bad-signature')
  expect(await apps.models.RequestLog.countDocuments({ requestId: 'sneaky' })).toBe(0)
})
