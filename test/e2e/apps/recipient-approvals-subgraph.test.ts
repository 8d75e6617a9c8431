/**
 * Recipient approvals through the apps subgraph's GraphQL, called over HTTP with a signed context (the apps subgraph
 * reads the actors domain through the real gateway and actors subgraph beside it): which
 * principal may call which operation (an app's identity never accepts terms; only the signed-in creator decides),
 * the fields the XRPC adapter and the dashboard pages read, and the entity references.
 */
import { upsertActor } from '@svc/actors'
import { registerApp } from '@svc/apps'
import { CONTEXT_HEADER, type Principal } from '@svc/internal-context'
import { signedContext } from '@svc/testing'
import { startGatewayWithApps, type GatewayFixture } from '../gateway/helpers'

const DASHBOARD_URL = 'http://127.0.0.1:1/dashboard'
const APP = 'did:web:approvals-app.example.com'
const OTHER_APP = 'did:web:other-app.example.com'
let fx: GatewayFixture
let seq = 0
const newCreator = () => `did:plc:subgraphcreator${++seq}${Date.now().toString(36)}`

interface Body {
  data?: any
  errors?: { message: string; path?: string[]; extensions?: Record<string, unknown> }[]
}

async function gql(principal: Principal, query: string, variables: Record<string, unknown> = {}): Promise<Body> {
  const res = await fetch(fx.apps.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      [CONTEXT_HEADER]: signedContext(fx.secrets.callerKeys, principal),
    },
    body: JSON.stringify({ query, variables }),
  })
  return (await res.json()) as Body
}

const app = (appDid = APP): Principal => ({ kind: 'app', appDid })
const dashboard = (actorDid: string, environment: 'test' | 'live' = 'test'): Principal => ({ kind: 'dashboard', actorDid, environment, sessionId: 'sess_test' })
const operator: Principal = { kind: 'operator', id: 'ops' }
const service: Principal = { kind: 'service', name: 'xrpc-adapter' }
const codeOf = (body: Body) => body.errors?.[0]?.extensions?.code

const FIELDS = `id appDid app { did name } appOrigin recipientDid environment status paymentTypes feeShareBps
  publicRecords { enabled defaults { attestation } } requestReason setupReturnUrl termsHash approvedAt
  dashboardUrl onboardingUrl recipient { did environment } createdAt updatedAt`
const REQUEST = `mutation ($input: RecipientApprovalInput!) { requestRecipientApproval(input: $input) { ${FIELDS} } }`
const ACCEPT = `mutation ($id: ID!, $termsHash: String!) { acceptRecipientApproval(id: $id, termsHash: $termsHash) { id status approvedAt } }`
const MOVE = (name: string) => `mutation ($id: ID!) { ${name}RecipientApproval(id: $id) { id status } }`
const LIST = `{ dashboardApprovals { id status app { name } appOrigin } }`
const ONE = `query ($id: ID!) { dashboardApproval(id: $id) { ${FIELDS} } }`
const ACCESS = `query ($environment: String, $recipientDid: String!) {
  appAccess(environment: $environment) { environment config { feeShareBps appUrl } recipientApproval(recipientDid: $recipientDid) { id status paymentTypes feeShareBps recipient { did environment } } }
}`

/** The app's request; the recipient is first made a known actor of both environments (the actors domain's fact). */
async function request(recipientDid: string, over: Record<string, unknown> = {}, principal: Principal = app()) {
  for (const environment of ['test', 'live']) await upsertActor({ models: fx.actors.models }, { did: recipientDid, environment })
  return gql(principal, REQUEST, { input: { environment: 'test', recipientDid, paymentTypes: ['tip'], ...over } })
}

beforeAll(async () => {
  fx = await startGatewayWithApps('apps_approvals_subgraph')
  const models = fx.apps.models
  await registerApp({ models }, { did: APP, environment: 'test', appUrl: 'https://approvals-app.example.com', feeShareBps: 400, name: 'Approvals' })
  await registerApp({ models }, { did: APP, environment: 'live', appUrl: 'https://approvals-app.example.com', feeShareBps: 300 })
  await registerApp({ models }, { did: OTHER_APP, environment: 'test', appUrl: 'https://other-app.example.com', feeShareBps: 100 })
})

afterAll(async () => {
  await fx?.stop()
})

describe('requestRecipientApproval (app principal)', () => {
  test('creates the request with the dashboard and onboarding URLs and every field the pages read', async () => {
    const creator = newCreator()
    const body = await request(creator, { paymentTypes: ['tip', 'shop'], requestReason: 'Tips', setupReturnUrl: 'https://approvals-app.example.com/done' })
    expect(body.errors).toBeUndefined()
    const a = body.data.requestRecipientApproval
    expect(a).toEqual({
      id: expect.stringMatching(/^apr_[0-9A-Za-z]{24}$/),
      appDid: APP,
      app: { did: APP, name: 'Approvals' },
      appOrigin: 'https://approvals-app.example.com',
      recipientDid: creator,
      environment: 'test',
      status: 'pending',
      paymentTypes: ['shop', 'tip'],
      feeShareBps: 400,
      publicRecords: { enabled: false, defaults: { attestation: 'public' } },
      requestReason: 'Tips',
      setupReturnUrl: 'https://approvals-app.example.com/done',
      termsHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      approvedAt: null,
      dashboardUrl: `${DASHBOARD_URL}/approvals/${a.id}`,
      onboardingUrl: `${DASHBOARD_URL}/onboarding/${a.id}`,
      recipient: { did: creator, environment: 'test' },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    })
  })

  test('contract errors keep their codes; GraphQL type errors are InvalidRequest; nothing is written', async () => {
    const creator = newCreator()
    expect(codeOf(await request(creator, { feeShareBps: 401 }))).toBe('InvalidRequest')
    expect(codeOf(await request(creator, { feeShareBps: 12.5 }))).toBe('InvalidRequest')
    expect(codeOf(await request(creator, { paymentTypes: ['gift'] }))).toBe('InvalidRequest')
    expect(codeOf(await request(creator, { setupReturnUrl: 'https://evil.example/x' }))).toBe('AppUrlNotAllowed')
    expect(codeOf(await request(creator, {}, app('did:web:unregistered.example.com')))).toBe('AppNotRegistered')
    expect(codeOf(await request(creator, { environment: 'live' }, app(OTHER_APP)))).toBe('AppEnvironmentNotConfigured')
    expect(codeOf(await request(APP))).toBe('InvalidRequest')
    expect(await fx.apps.models.RecipientApproval.countDocuments({ recipientDid: { $in: [creator, APP] } })).toBe(0)
  })

  test('only apps request approvals: a dashboard session, a service or an operator → NotAllowed', async () => {
    const creator = newCreator()
    for (const p of [dashboard(creator), service, operator]) expect(codeOf(await request(creator, {}, p))).toBe('NotAllowed')
    expect(await fx.apps.models.RecipientApproval.countDocuments({ recipientDid: creator })).toBe(0)
  })
})

describe('the creator decides, and only the creator', () => {
  test('an app (its service-auth identity), a service or an operator cannot accept, decline, revoke, block or unblock', async () => {
    const creator = newCreator()
    const a = (await request(creator)).data.requestRecipientApproval
    for (const p of [app(), service, operator]) {
      expect(codeOf(await gql(p, ACCEPT, { id: a.id, termsHash: a.termsHash }))).toBe('NotAllowed')
      for (const move of ['decline', 'revoke', 'block', 'unblock']) expect(codeOf(await gql(p, MOVE(move), { id: a.id }))).toBe('NotAllowed')
      expect(codeOf(await gql(p, LIST))).toBe('NotAllowed')
      expect(codeOf(await gql(p, ONE, { id: a.id }))).toBe('NotAllowed')
    }
    const doc = await fx.apps.models.RecipientApproval.findOne({ id: a.id }).lean()
    expect(doc?.status).toBe('pending')
    expect(await fx.apps.models.Outbox.countDocuments({ 'data.approvalId': a.id })).toBe(0)
  })

  test('the signed-in creator sees and decides its requests; another creator or environment gets NotFound', async () => {
    const creator = newCreator()
    const a = (await request(creator, { requestReason: 'hello' })).data.requestRecipientApproval

    const list = await gql(dashboard(creator), LIST)
    expect(list).toEqual({ data: { dashboardApprovals: [{ id: a.id, status: 'pending', app: { name: 'Approvals' }, appOrigin: 'https://approvals-app.example.com' }] } })
    expect((await gql(dashboard(creator, 'live'), LIST)).data.dashboardApprovals).toEqual([])
    expect((await gql(dashboard(creator), ONE, { id: a.id })).data.dashboardApproval).toEqual(a)

    for (const stranger of [dashboard(newCreator()), dashboard(creator, 'live')]) {
      expect(codeOf(await gql(stranger, ONE, { id: a.id }))).toBe('NotFound')
      expect(codeOf(await gql(stranger, ACCEPT, { id: a.id, termsHash: a.termsHash }))).toBe('NotFound')
      expect(codeOf(await gql(stranger, MOVE('block'), { id: a.id }))).toBe('NotFound')
    }

    expect(codeOf(await gql(dashboard(creator), ACCEPT, { id: a.id, termsHash: '0'.repeat(64) }))).toBe('ApprovalTermsChanged')
    const accepted = await gql(dashboard(creator), ACCEPT, { id: a.id, termsHash: a.termsHash })
    expect(accepted.data.acceptRecipientApproval).toEqual({ id: a.id, status: 'approved', approvedAt: expect.any(String) })
    expect(codeOf(await gql(dashboard(creator), MOVE('decline'), { id: a.id }))).toBe('NotAllowed')
    expect((await gql(dashboard(creator), MOVE('revoke'), { id: a.id })).data.revokeRecipientApproval).toEqual({ id: a.id, status: 'revoked' })
    expect((await gql(dashboard(creator), MOVE('block'), { id: a.id })).data.blockRecipientApproval).toEqual({ id: a.id, status: 'blocked' })
    expect(codeOf(await request(creator))).toBe('RecipientAppApprovalBlocked')
    // a block after a revoke: unblocked, still revoked (accepted again only once the app asks again)
    expect((await gql(dashboard(creator), MOVE('unblock'), { id: a.id })).data.unblockRecipientApproval).toEqual({ id: a.id, status: 'revoked' })
    expect(codeOf(await gql(dashboard(creator), ACCEPT, { id: a.id, termsHash: a.termsHash }))).toBe('NotAllowed')
    expect((await request(creator)).data.requestRecipientApproval.status).toBe('pending')
    expect((await gql(dashboard(creator), MOVE('decline'), { id: a.id })).data.declineRecipientApproval).toEqual({ id: a.id, status: 'declined' })

    const types = (await fx.apps.models.Outbox.find({ 'data.approvalId': a.id }).sort({ occurredAt: 1 }).lean()).map((e) => e.type)
    expect(types).toEqual(['app.authorization.granted', 'app.authorization.revoked'])
  })
})

describe('AppAccess: recipientApproval and config', () => {
  test('the app reads its request (null when none, never creating one) and its configuration in the environment', async () => {
    const creator = newCreator()
    const none = await gql(app(), ACCESS, { environment: 'test', recipientDid: creator })
    expect(none).toEqual({ data: { appAccess: { environment: 'test', config: { feeShareBps: 400, appUrl: 'https://approvals-app.example.com' }, recipientApproval: null } } })
    expect(await fx.apps.models.RecipientApproval.countDocuments({ recipientDid: creator })).toBe(0)

    const a = (await request(creator)).data.requestRecipientApproval
    const read = await gql(app(), ACCESS, { environment: 'test', recipientDid: creator })
    expect(read.data.appAccess.recipientApproval).toEqual({ id: a.id, status: 'pending', paymentTypes: ['tip'], feeShareBps: 400, recipient: { did: creator, environment: 'test' } })
    // the live environment of the same app, and another app, see nothing
    const live = await gql(app(), ACCESS, { environment: 'live', recipientDid: creator })
    expect(live.data.appAccess).toMatchObject({ environment: 'live', config: { feeShareBps: 300 }, recipientApproval: null })
    expect((await gql(app(OTHER_APP), ACCESS, { environment: 'test', recipientDid: creator })).data.appAccess.recipientApproval).toBeNull()
  })

  test('AppAccess fields of a reference belong to its app: another app → AppUnauthorized, a dashboard session → NotAllowed', async () => {
    const creator = newCreator()
    await request(creator)
    const entity = `{ _entities(representations: [{ __typename: "AppAccess", appDid: "${APP}", environment: "test" }]) {
      ... on AppAccess { recipientApproval(recipientDid: "${creator}") { id } }
    } }`
    expect(codeOf(await gql(app(OTHER_APP), entity))).toBe('AppUnauthorized')
    expect(codeOf(await gql(dashboard(creator), entity))).toBe('NotAllowed')
    expect((await gql(app(), entity)).data._entities[0].recipientApproval.id).toMatch(/^apr_/)
    expect((await gql(operator, entity)).data._entities[0].recipientApproval.id).toMatch(/^apr_/)
  })

  test("the serving domains read an app's access as far as they need it: tickets its configuration, payments its approvals too", async () => {
    const creator = newCreator()
    const a = (await request(creator)).data.requestRecipientApproval
    const FOR = `query ($recipientDid: String!) { appAccessFor(appDid: "${APP}", environment: "test") {
      environment config { modules { tickets } } recipientApproval(recipientDid: $recipientDid) { id status paymentSetup }
    } }`
    const payments = await gql({ kind: 'service', name: 'payments' }, FOR, { recipientDid: creator })
    expect(payments.errors).toBeUndefined()
    expect(payments.data.appAccessFor).toMatchObject({ environment: 'test', recipientApproval: { id: a.id, status: 'pending' } })
    // a ticket sale involves no approval: the tickets domain does not read one, nor the creator's payout readiness
    const tickets = await gql({ kind: 'service', name: 'tickets' }, FOR, { recipientDid: creator })
    expect(codeOf(tickets)).toBe('NotAllowed')
    expect(tickets.errors!.map((e) => e.path)).toEqual([['appAccessFor', 'recipientApproval']])
    expect(tickets.data.appAccessFor.config).toEqual({ modules: { tickets: expect.any(Boolean) } })
  })

  test('a RecipientApproval reference resolves for its app, its creator and operators; null for anyone else', async () => {
    const creator = newCreator()
    const a = (await request(creator)).data.requestRecipientApproval
    const entity = `{ _entities(representations: [{ __typename: "RecipientApproval", id: "${a.id}" }]) { ... on RecipientApproval { id status } } }`
    for (const p of [app(), dashboard(creator), operator]) expect((await gql(p, entity)).data._entities).toEqual([{ id: a.id, status: 'pending' }])
    for (const p of [app(OTHER_APP), dashboard(newCreator()), dashboard(creator, 'live')]) expect((await gql(p, entity)).data._entities).toEqual([null])
    expect(codeOf(await gql(service, entity))).toBe('NotAllowed')
  })

  test("ActorProfile.recipientApprovals: the actor's own dashboard session and operators only", async () => {
    const creator = newCreator()
    const a = (await request(creator)).data.requestRecipientApproval
    const entity = (environment: string) => `{ _entities(representations: [{ __typename: "ActorProfile", did: "${creator}", environment: "${environment}" }]) {
      ... on ActorProfile { recipientApprovals { id status } }
    } }`
    expect((await gql(dashboard(creator), entity('test'))).data._entities).toEqual([{ recipientApprovals: [{ id: a.id, status: 'pending' }] }])
    expect((await gql(operator, entity('test'))).data._entities).toEqual([{ recipientApprovals: [{ id: a.id, status: 'pending' }] }])
    expect((await gql(operator, entity('live'))).data._entities).toEqual([{ recipientApprovals: [] }])
    for (const p of [dashboard(newCreator()), dashboard(creator, 'live'), app(), service]) expect(codeOf(await gql(p, entity('test')))).toBe('NotAllowed')
  })
})
