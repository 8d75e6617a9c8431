/**
 * Who may call the gateway: a process with an internal context signed by its own key, stating a principal that
 * process may state (the adapter: apps, API keys, dashboard sessions, itself, its checkout pages; the events workers:
 * the service `events` and nothing else), or the operator token.
 * Everything else is refused with 401 before GraphQL runs. Contract error codes from a subgraph
 * survive the gateway in `errors[0].extensions.code`.
 */
import { getIntrospectionQuery, parse } from 'graphql'
import { createHmac } from 'node:crypto'
import pino from 'pino'
import { registerApp } from '@svc/apps'
import { buildGateway } from '@svc/gateway'
import type { Issuer } from '@svc/internal-context'
import { postGraphQL, startGatewayWithApps, type GatewayFixture, type GraphQLBody } from './helpers'

let fx: GatewayFixture
const REGISTERED = 'did:web:auth-app.example.com'
const APP_QUERY = `{ app(did: "${REGISTERED}") { did name } }`

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
/** A context as `issuer` would sign it, with any principal (to reach the checks behind the signature). */
function contextOf(issuer: Issuer, principal: unknown, opts: { key?: string; exp?: number } = {}) {
  const body = Buffer.from(JSON.stringify({ principal, requestId: 'req-auth', exp: opts.exp ?? Math.floor(Date.now() / 1000) + 60 })).toString('base64url')
  const sig = createHmac('sha256', opts.key ?? fx.secrets.callerKeys[issuer]).update(`${issuer}.${body}`).digest('base64url')
  return { 'svc-context': `${issuer}.${body}.${sig}` }
}
const adapter = (caller: unknown) => contextOf('xrpc-adapter', caller)
const operator = () => bearer(fx.secrets.operatorToken)
const events = (caller: unknown = { kind: 'service', name: 'events' }) => contextOf('events', caller)

function expectUnauthorized(res: { status: number; body: GraphQLBody }) {
  expect(res.status).toBe(401)
  expect(res.body).toEqual({ error: 'Unauthorized', message: expect.any(String) })
  expect(res.body).not.toHaveProperty('data')
}

beforeAll(async () => {
  fx = await startGatewayWithApps('gateway_auth')
  await registerApp({ models: fx.apps.models }, { did: REGISTERED, environment: 'test', appUrl: 'https://auth-app.example.com', feeShareBps: 0, name: 'Auth app' })
})

afterAll(async () => {
  await fx?.stop()
})

describe('refused with 401 before GraphQL runs', () => {
  test('no credentials', async () => {
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY))
  })

  test('a wrong bearer token', async () => {
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, bearer('x'.repeat(64))))
  })

  test('the operator token in another scheme, or with extra text', async () => {
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, { authorization: `Basic ${fx.secrets.operatorToken}` }))
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, { authorization: fx.secrets.operatorToken }))
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, bearer(`${fx.secrets.operatorToken}x`)))
  })

  test("a process's key as a bearer token (keys sign, they are never sent)", async () => {
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, bearer(fx.secrets.callerKeys['xrpc-adapter'])))
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, bearer(fx.secrets.callerKeys.gateway)))
  })

  test('a context signed with another key, expired, of an unknown issuer, or not a context', async () => {
    const app = { kind: 'app', appDid: REGISTERED }
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, contextOf('xrpc-adapter', app, { key: 'k'.repeat(64) })))
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, contextOf('xrpc-adapter', app, { exp: Math.floor(Date.now() / 1000) - 1 })))
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, contextOf('billing' as Issuer, app, { key: 'k'.repeat(64) })))
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, { 'svc-context': JSON.stringify(app) }))
    // a context and the operator token: the context decides, and this one is refused
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, { ...operator(), 'svc-context': 'x.y.z' }))
  })

  test.each([
    ['JSON but not an object', 'app'],
    ['JSON null', null],
    ['an app whose DID is not a DID', { kind: 'app', appDid: 'example.com' }],
    ['an app without a DID', { kind: 'app' }],
    ['an API key hash that is not SHA-256 hex', { kind: 'apiKey', keyHash: 'abc' }],
    ['a service without a name', { kind: 'service' }],
    ['an operator (only the operator token makes one)', { kind: 'operator', id: 'mallory' }],
    ['the gateway itself', { kind: 'gateway' }],
    ['an unknown kind', { kind: 'root' }],
    ['the events workers (only their own key makes them)', { kind: 'service', name: 'events' }],
    ['the payments domain (only its own key makes it)', { kind: 'service', name: 'payments' }],
    ['a service the adapter does not speak for', { kind: 'service', name: 'billing' }],
  ])("the adapter's context stating %s", async (_label, caller) => {
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, adapter(caller)))
  })

  test.each([
    ['an app', { kind: 'app', appDid: REGISTERED }],
    ['the adapter', { kind: 'service', name: 'xrpc-adapter' }],
    ['an operator', { kind: 'operator', id: 'events' }],
    ['the apps domain', { kind: 'service', name: 'apps' }],
  ])("the events workers' context stating %s", async (_label, caller) => {
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, '{ appConfig(environment: "test") { appDid } }', events(caller)))
  })

  test('a GET query without credentials', async () => {
    const res = await fetch(`${fx.graphqlUrl}?query=${encodeURIComponent(APP_QUERY)}`)
    expectUnauthorized({ status: res.status, body: (await res.json()) as GraphQLBody })
  })

  test('an introspection query without credentials, by GET or POST', async () => {
    const query = '{ __schema { queryType { fields { name } } } }'
    const get = await fetch(`${fx.graphqlUrl}?query=${encodeURIComponent(query)}`)
    expectUnauthorized({ status: get.status, body: (await get.json()) as GraphQLBody })
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, query))
  })

  test('the GraphQL route under a percent-encoded path', async () => {
    expectUnauthorized(await postGraphQL(`${fx.baseUrl}/%67raphql`, APP_QUERY))
    const get = await fetch(`${fx.baseUrl}/%67raphql?query=${encodeURIComponent('{ __typename }')}`)
    expectUnauthorized({ status: get.status, body: (await get.json()) as GraphQLBody })
  })
})

describe('accepted callers', () => {
  test('the operator token', async () => {
    const res = await postGraphQL(fx.graphqlUrl, APP_QUERY, operator())
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ data: { app: { did: REGISTERED, name: 'Auth app' } } })
  })

  test('the operator token with an operator id', async () => {
    const res = await postGraphQL(fx.graphqlUrl, APP_QUERY, { ...operator(), 'svc-operator-id': 'alice@example.com' })
    expect(res.body).toEqual({ data: { app: { did: REGISTERED, name: 'Auth app' } } })
  })

  test("the adapter's context for an app reaches the apps subgraph as that app", async () => {
    const res = await postGraphQL(fx.graphqlUrl, '{ appConfig(environment: "test") { appDid environment appUrl } }', adapter({ kind: 'app', appDid: REGISTERED }))
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ data: { appConfig: { appDid: REGISTERED, environment: 'test', appUrl: 'https://auth-app.example.com' } } })
  })

  test("the events workers' context is the service events", async () => {
    const query = `{ eventEndpoint(appDid: "${REGISTERED}", environment: "test") { channel configured paused } }`
    const res = await postGraphQL(fx.graphqlUrl, query, events())
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ data: { eventEndpoint: { channel: 'webhook', configured: false, paused: false } } })
    // and only that service: an app's operation is refused by the subgraph
    const asApp = await postGraphQL(fx.graphqlUrl, '{ appConfig(environment: "test") { appDid } }', events())
    expect(asApp.body.errors?.[0]?.extensions?.code).toBe('NotAllowed')
  })

  test('/health answers 200 without credentials', async () => {
    const res = await fetch(`${fx.baseUrl}/health`)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ ok: true, services: ['apps', 'actors'] })
  })
})

describe('contract error codes through the gateway', () => {
  test('an unregistered app calling appConfig → AppNotRegistered', async () => {
    const res = await postGraphQL(fx.graphqlUrl, '{ appConfig(environment: "test") { appDid } }', adapter({ kind: 'app', appDid: 'did:key:zUnknown' }))
    expect(res.body.data ?? null).toBeNull()
    expect(res.body.errors).toHaveLength(1)
    expect(res.body.errors?.[0]?.extensions).toEqual({ code: 'AppNotRegistered', http: { status: 404 } })
  })

  test('a registered app without that environment → AppEnvironmentNotConfigured', async () => {
    const res = await postGraphQL(fx.graphqlUrl, '{ appConfig(environment: "live") { appDid } }', adapter({ kind: 'app', appDid: REGISTERED }))
    expect(res.body.data ?? null).toBeNull()
    expect(res.body.errors?.[0]?.extensions?.code).toBe('AppEnvironmentNotConfigured')
  })

  test('a bad environment → InvalidRequest', async () => {
    const res = await postGraphQL(fx.graphqlUrl, '{ appConfig(environment: "prod") { appDid } }', adapter({ kind: 'app', appDid: REGISTERED }))
    expect(res.body.data ?? null).toBeNull()
    expect(res.body.errors?.[0]?.extensions?.code).toBe('InvalidRequest')
  })

  test('an operator calling appConfig → NotAllowed', async () => {
    const res = await postGraphQL(fx.graphqlUrl, '{ appConfig(environment: "test") { appDid } }', operator())
    expect(res.body.data ?? null).toBeNull()
    expect(res.body.errors?.[0]?.extensions).toEqual({ code: 'NotAllowed', http: { status: 403 } })
  })

  test('an app calling requestLog → NotAllowed', async () => {
    const res = await postGraphQL(fx.graphqlUrl, '{ requestLog(environment: "test") { requestId } }', adapter({ kind: 'app', appDid: REGISTERED }))
    expect(res.body.data ?? null).toBeNull()
    expect(res.body.errors?.[0]?.extensions).toEqual({ code: 'NotAllowed', http: { status: 403 } })
  })

  test('an app asking for an app registration (operators only) → NotAllowed, nothing returned', async () => {
    const res = await postGraphQL(fx.graphqlUrl, APP_QUERY, adapter({ kind: 'app', appDid: REGISTERED }))
    expect(res.body.data).toEqual({ app: null })
    expect(res.body.errors?.[0]?.extensions?.code).toBe('NotAllowed')
  })

  test('an app recording a developer request (the adapter service only) → NotAllowed, nothing recorded', async () => {
    const mutation = `mutation { recordDeveloperRequest(input: { requestId: "r-app", method: "GET", path: "/x", status: 200, durationMs: 1 }) }`
    const res = await postGraphQL(fx.graphqlUrl, mutation, adapter({ kind: 'app', appDid: REGISTERED }))
    expect(res.body.data ?? null).toBeNull()
    expect(res.body.errors?.[0]?.extensions?.code).toBe('NotAllowed')
    expect(await fx.apps.models.RequestLog.countDocuments({ requestId: 'r-app' })).toBe(0)
  })

  test('another service (the checkout pages) recording a developer request → NotAllowed, nothing recorded', async () => {
    const mutation = `mutation { recordDeveloperRequest(input: { requestId: "r-checkout", method: "GET", path: "/x", status: 200, durationMs: 1 }) }`
    const res = await postGraphQL(fx.graphqlUrl, mutation, adapter({ kind: 'service', name: 'checkout' }))
    expect(res.body.errors?.[0]?.extensions?.code).toBe('NotAllowed')
    expect(await fx.apps.models.RequestLog.countDocuments({ requestId: 'r-checkout' })).toBe(0)
  })

  test('the adapter service records a developer request; an operator reads it', async () => {
    const mutation = `mutation { recordDeveloperRequest(input: { requestId: "r-svc", environment: "test", appDid: "${REGISTERED}", method: "GET", path: "/api/app/developer/config", status: 200, durationMs: 3.4 }) }`
    const rec = await postGraphQL(fx.graphqlUrl, mutation, adapter({ kind: 'service', name: 'xrpc-adapter' }))
    expect(rec.body).toEqual({ data: { recordDeveloperRequest: true } })
    const res = await postGraphQL(fx.graphqlUrl, `{ requestLog(environment: "test", appDid: "${REGISTERED}") { requestId path status durationMs } }`, operator())
    expect(res.body).toEqual({ data: { requestLog: [{ requestId: 'r-svc', path: '/api/app/developer/config', status: 200, durationMs: 3 }] } })
    // a limit out of range is refused, as every other list refuses it (it was read as the nearest bound)
    for (const limit of [0, 201]) {
      const refused = await postGraphQL(fx.graphqlUrl, `{ requestLog(environment: "test", limit: ${limit}) { requestId } }`, operator())
      expect({ limit, code: refused.body.errors?.[0]?.extensions?.code, message: refused.body.errors?.[0]?.message }).toEqual({ limit, code: 'InvalidRequest', message: 'limit must be an integer from 1 to 200' })
    }
  })
})

describe('what one operation may ask (the gateway costs it before any subgraph is asked)', () => {
  test('aliases of a list field are refused with 400: past 20 at the top (each a subgraph request), or past the cost', async () => {
    const aliases = (n: number, limit: number) => Array.from({ length: n }, (_, i) => `a${i}: requestLog(limit: ${limit}) { requestId }`).join(' ')
    const many = await postGraphQL(fx.graphqlUrl, `{ ${aliases(21, 1)} }`, operator())
    expect(many.status).toBe(400)
    expect(many.body.errors?.[0]?.message).toMatch(/at most 20 fields at its top/)
    const costly = await postGraphQL(fx.graphqlUrl, `{ ${aliases(20, 5000)} }`, operator())
    expect(costly.status).toBe(400)
    expect(costly.body.errors?.[0]?.message).toMatch(/asks too much at once/)
    expect((await postGraphQL(fx.graphqlUrl, `{ ${aliases(20, 200)} }`, operator())).body.errors).toBeUndefined()
  })

  test("a limit given by a variable is costed with the request's value before anything runs (validation sees no variables)", async () => {
    const query = `query L($n: Int) { ${Array.from({ length: 20 }, (_, i) => `a${i}: requestLog(limit: $n) { requestId }`).join(' ')} }`
    const send = (n: number) =>
      fetch(fx.graphqlUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...operator() }, body: JSON.stringify({ query, variables: { n } }) })
    const costly = await send(5000)
    expect(costly.status).toBe(400)
    const costlyBody = (await costly.json()) as GraphQLBody
    expect(costlyBody).toEqual({ data: null, errors: [expect.objectContaining({ message: expect.stringMatching(/asks too much at once/) })] })
    // the same text (its validation cached) with a small value runs
    const small = await send(200)
    expect(small.status).toBe(200)
    expect(((await small.json()) as GraphQLBody).errors).toBeUndefined()
    expect((await send(5000)).status).toBe(400)
  })

  test('list fields nested through each other (approvals → recipient → approvals …) are refused with 400', async () => {
    const nested = `{ actor(did: "${REGISTERED}", environment: "test") { recipientApprovals { recipient { recipientApprovals { recipient { recipientApprovals { recipient { recipientApprovals { id } } } } } } } } }`
    const res = await postGraphQL(fx.graphqlUrl, nested, operator())
    expect(res.status).toBe(400)
    expect(res.body.errors?.[0]?.message).toMatch(/asks too much at once/)
  })

  test('a document of 20,000 repeated fields is refused before validation (whose overlap rule compares every pair)', async () => {
    const res = await postGraphQL(fx.graphqlUrl, `{ ${'__typename '.repeat(20_000)}}`, operator())
    expect(res.status).toBe(400)
    expect(JSON.stringify(res.body)).toMatch(/more th\w+ 2000 tokens/)
  })

  test('a body over 512 KiB is refused (413) by the gateway itself, not by a subgraph it forwards to', async () => {
    const res = await postGraphQL(fx.graphqlUrl, `{ __typename } # ${'x'.repeat(600 * 1024)}`, operator())
    expect(res.status).toBe(413)
  })

  test('introspection aliased (each alias repeats the whole schema: 700 bytes asked for 100 MB) is refused; plain introspection passes', async () => {
    const T3 = 'fragment T3 on __Type { name kind }'
    const aliased = `{ s0: __schema { ...S } s1: __schema { ...S } } fragment S on __Schema { t0: types { ...T } t1: types { ...T } } fragment T on __Type { name f0: fields { name t0: type { ...T3 } } } ${T3}`
    const refused = await postGraphQL(fx.graphqlUrl, aliased, operator())
    expect(refused.status).toBe(400)
    expect(refused.body.errors?.[0]?.message).toMatch(/asks too much at once/)
    const plain = await postGraphQL(fx.graphqlUrl, `{ __schema { types { name fields { name type { name kind ofType { name kind } } } } } }`, operator())
    expect(plain.status).toBe(200)
    expect((plain.body.data as { __schema: { types: unknown[] } }).__schema.types.length).toBeGreaterThan(10)
    expect((await postGraphQL(fx.graphqlUrl, getIntrospectionQuery(), operator())).status).toBe(200)
  })

  test('a document of many operations is refused before each is walked; a query sent as a JSON AST (around the token limit and the cost) is refused', async () => {
    const many = Array.from({ length: 11 }, (_, i) => `query q${i} { __typename }`).join(' ')
    const res = await postGraphQL(fx.graphqlUrl, many, operator())
    expect(res.status).toBe(400)
    expect(res.body.errors?.[0]?.message).toMatch(/at most 10 operations/)
    // 600 aliases of requestLog(limit: 200), whose text is refused, as an AST whose first limit reads "200,"
    const ast = parse(`{ ${Array.from({ length: 600 }, (_, i) => `a${i}: requestLog(limit: 200) { requestId }`).join(' ')} }`) as unknown as { definitions: { selectionSet: { selections: { arguments: { value: { value: string } }[] }[] } }[] }
    ast.definitions[0]!.selectionSet.selections[0]!.arguments[0]!.value.value = '200,'
    const asAst = await postGraphQL(fx.graphqlUrl, JSON.stringify(ast), operator())
    expect(asAst.status).toBe(400)
    expect(JSON.stringify(asAst.body)).toMatch(/GraphQL text/)
  })

  test('a query that is any other JSON value is refused as not GraphQL text, not failed inside validation', async () => {
    for (const query of ['1', 'true', '"{ __typename }"', 'null', '[]']) {
      const res = await postGraphQL(fx.graphqlUrl, query, operator())
      expect({ query, status: res.status }).toEqual({ query, status: 400 })
      expect(JSON.stringify(res.body)).toMatch(/the query must be GraphQL text/)
    }
    const res = await fetch(fx.graphqlUrl, { method: 'POST', headers: { 'content-type': 'application/json', ...operator() }, body: JSON.stringify({ query: 1 }) })
    expect(res.status).toBe(400)
  })

  test('a read naming a string that holds NUL (U+0000), in the document or its variables, is InvalidRequest, not an internal error', async () => {
    const inDocument = await postGraphQL(fx.graphqlUrl, '{ app(did: "did:web:a\\u0000b") { did } }', operator())
    const viaVariables = await fetch(fx.graphqlUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...operator() },
      body: JSON.stringify({ query: 'query($d: ID!) { app(did: $d) { did } }', variables: { d: 'did:web:a\u0000b' } }),
    })
    for (const res of [inDocument, { status: viaVariables.status, body: (await viaVariables.json()) as GraphQLBody }]) {
      // PostgreSQL under FerretDB refuses the filter; MongoDB would find no app
      if (res.body.errors) expect(res.body.errors[0]).toMatchObject({ message: expect.stringMatching(/must not contain the NUL character/), extensions: { code: 'InvalidRequest' } })
      else expect(res.body.data).toEqual({ app: null })
    }
  })

  test('an operator\'s ordinary reads pass', async () => {
    const res = await postGraphQL(fx.graphqlUrl, `{ requestLog(limit: 200) { requestId path status } app(did: "${REGISTERED}") { did } }`, operator())
    expect(res.status).toBe(200)
    expect(res.body.errors).toBeUndefined()
  })
})

describe('request ids and request lines', () => {
  test("a caller's request id is kept only when it looks like one; a request line shows the path, not the query", async () => {
    const lines: string[] = []
    const gateway = await buildGateway({
      services: [{ name: 'apps', url: fx.apps.url }, { name: 'actors', url: fx.actors.url }],
      secrets: fx.secrets,
      graphiql: false,
      logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(line) }),
      retryServicesCount: 1,
    })
    try {
      const ask = (requestId: string, url = '/graphql') =>
        gateway.inject({ method: 'POST', url, headers: { ...operator(), 'content-type': 'application/json', 'svc-request-id': requestId }, payload: JSON.stringify({ query: APP_QUERY }) })
      expect((await ask('req_0123456789abcdef')).headers['svc-request-id']).toBe('req_0123456789abcdef')
      expect((await ask('whd_0123456789abcdef.3')).headers['svc-request-id']).toBe('whd_0123456789abcdef.3')
      for (const forged of ['x'.repeat(65), 'a b', 'req\n{"level":60}']) {
        const res = await ask(forged)
        expect(res.statusCode).toBe(200)
        expect(res.headers['svc-request-id']).toMatch(/^[0-9a-f-]{36}$/)
      }
      await ask('req_withquery', '/graphql?variables=%7B%22t%22%3A%22cko_test_SECRETSECRET%22%7D')
      // a path of no route, with a query (a misdirected call): 404, and its query is not logged either
      const missed = await gateway.inject({ method: 'GET', url: '/graphql/?variables=%7B%22t%22%3A%22cko_test_SECRETOTHER%22%7D', headers: operator() })
      expect(missed.statusCode).toBe(404)
      expect(lines.join('')).not.toMatch(/SECRETSECRET|SECRETOTHER/)
      expect(lines.some((l) => l.includes('"url":"/graphql"'))).toBe(true)
    } finally {
      await gateway.close()
    }
  })
})
