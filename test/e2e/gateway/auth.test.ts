/**
 * Who may call the gateway: the adapter token with a valid `svc-caller`, the events workers' token (the service
 * `events` and nothing else), or the operator token.
 * Everything else is refused with 401 before GraphQL runs. Contract error codes from a subgraph
 * survive the gateway in `errors[0].extensions.code`.
 */
import { registerApp } from '@svc/apps'
import { postGraphQL, startGatewayWithApps, type GatewayFixture, type GraphQLBody } from './helpers'

let fx: GatewayFixture
const REGISTERED = 'did:web:auth-app.example.com'
const APP_QUERY = `{ app(did: "${REGISTERED}") { did name } }`

const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const adapter = (caller: unknown) => ({
  ...bearer(fx.secrets.adapterGatewayToken),
  'svc-caller': typeof caller === 'string' ? caller : JSON.stringify(caller),
})
const operator = () => bearer(fx.secrets.operatorToken)
const events = (caller?: unknown) => ({
  ...bearer(fx.secrets.eventsGatewayToken),
  ...(caller === undefined ? {} : { 'svc-caller': JSON.stringify(caller) }),
})

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

  test('the adapter token without svc-caller', async () => {
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, bearer(fx.secrets.adapterGatewayToken)))
  })

  test.each([
    ['not JSON', '{kind: app'],
    ['JSON but not an object', '"app"'],
    ['JSON null', 'null'],
    ['an app whose DID is not a DID', { kind: 'app', appDid: 'example.com' }],
    ['an app without a DID', { kind: 'app' }],
    ['an API key hash that is not SHA-256 hex', { kind: 'apiKey', keyHash: 'abc' }],
    ['a service without a name', { kind: 'service' }],
    ['an operator (only the operator token makes one)', { kind: 'operator', id: 'mallory' }],
    ['the gateway itself', { kind: 'gateway' }],
    ['an unknown kind', { kind: 'root' }],
    ['the events workers (only their own token makes them)', { kind: 'service', name: 'events' }],
    ['a service the adapter does not speak for', { kind: 'service', name: 'billing' }],
  ])('the adapter token with svc-caller %s', async (_label, caller) => {
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, APP_QUERY, adapter(caller)))
  })

  test.each([
    ['an app', { kind: 'app', appDid: REGISTERED }],
    ['the adapter', { kind: 'service', name: 'xrpc-adapter' }],
    ['an operator', { kind: 'operator', id: 'events' }],
    ['not JSON', '{kind: service'],
  ])("the events workers' token claiming to be %s", async (_label, caller) => {
    const headers = typeof caller === 'string' ? { ...events(), 'svc-caller': caller } : events(caller)
    expectUnauthorized(await postGraphQL(fx.graphqlUrl, '{ appConfig(environment: "test") { appDid } }', headers))
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

  test('the adapter token with an app caller reaches the apps subgraph as that app', async () => {
    const res = await postGraphQL(fx.graphqlUrl, '{ appConfig(environment: "test") { appDid environment appUrl } }', adapter({ kind: 'app', appDid: REGISTERED }))
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ data: { appConfig: { appDid: REGISTERED, environment: 'test', appUrl: 'https://auth-app.example.com' } } })
  })

  test("the events workers' token is the service events, with or without saying so", async () => {
    const query = `{ eventEndpoint(appDid: "${REGISTERED}", environment: "test") { channel configured paused } }`
    for (const headers of [events(), events({ kind: 'service', name: 'events' })]) {
      const res = await postGraphQL(fx.graphqlUrl, query, headers)
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ data: { eventEndpoint: { channel: 'webhook', configured: false, paused: false } } })
    }
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

  test('the adapter service records a developer request; an operator reads it', async () => {
    const mutation = `mutation { recordDeveloperRequest(input: { requestId: "r-svc", environment: "test", appDid: "${REGISTERED}", method: "GET", path: "/api/app/developer/config", status: 200, durationMs: 3.4 }) }`
    const rec = await postGraphQL(fx.graphqlUrl, mutation, adapter({ kind: 'service', name: 'xrpc-adapter' }))
    expect(rec.body).toEqual({ data: { recordDeveloperRequest: true } })
    const res = await postGraphQL(fx.graphqlUrl, `{ requestLog(environment: "test", appDid: "${REGISTERED}") { requestId path status durationMs } }`, operator())
    expect(res.body).toEqual({ data: { requestLog: [{ requestId: 'r-svc', path: '/api/app/developer/config', status: 200, durationMs: 3 }] } })
  })
})
