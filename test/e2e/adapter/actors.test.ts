/**
 * money.svc.actor.getPayoutStatus / getProfile through the whole stack (adapter → gateway → apps subgraph's
 * appAccess → actors subgraph → FerretDB): the contract's errors, the environment selection rule, every payout
 * status, test/live isolation, and actors shared by every app of an environment.
 */
import { signedContext } from '@svc/testing'
import type { Principal } from '@svc/internal-context'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, xrpcGet } from './helpers'

const PAYOUT = 'money.svc.actor.getPayoutStatus'
const PROFILE = 'money.svc.actor.getProfile'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('actors')
})
afterAll(async () => {
  await stack.stop()
})

async function payout(app: TestApp, params: Record<string, string>) {
  return xrpcGet(stack, PAYOUT, params, bearer(await app.jwt(PAYOUT)))
}

async function profile(app: TestApp, params: Record<string, string>) {
  return xrpcGet(stack, PROFILE, params, bearer(await app.jwt(PROFILE)))
}

describe('getPayoutStatus', () => {
  it('answers exactly {actor, payable, status} for a ready creator', async () => {
    const app = await stack.newApp()
    const actor = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
    expect(expectOk(await payout(app, { actor: actor.did, environment: 'test' }))).toEqual({ actor: actor.did, payable: true, status: 'ready' })
  })

  it.each([
    ['ready', true],
    ['onboarding-required', false],
    ['pending-verification', false],
    ['restricted', false],
  ] as const)('payout status %s → payable %s', async (status, payable) => {
    const app = await stack.newApp()
    const actor = await stack.newActor({ environment: 'test', payoutStatus: status })
    expect(expectOk(await payout(app, { actor: actor.did }))).toEqual({ actor: actor.did, payable, status })
  })

  it('a new creator without a payout account is onboarding-required, not payable', async () => {
    const app = await stack.newApp()
    const actor = await stack.newActor({ environment: 'test' })
    expect(expectOk(await payout(app, { actor: actor.did }))).toEqual({ actor: actor.did, payable: false, status: 'onboarding-required' })
  })

  it('no actor parameter → 400 ActorRequired', async () => {
    const app = await stack.newApp()
    expectError(await payout(app, {}), 400, 'ActorRequired')
    expectError(await payout(app, { environment: 'test' }), 400, 'ActorRequired')
    expectError(await payout(app, { actor: '', environment: 'test' }), 400, 'ActorRequired')
  })

  it('an actor unknown in the environment → 404 ActorNotFound', async () => {
    const app = await stack.newApp()
    expectError(await payout(app, { actor: 'did:plc:nobodyhere0000000000000', environment: 'test' }), 404, 'ActorNotFound')
  })

  it('an unregistered app → 403 AppUnauthorized (even for a known actor)', async () => {
    const app = await stack.newApp({ environments: [] })
    const actor = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
    expectError(await payout(app, { actor: actor.did, environment: 'test' }), 403, 'AppUnauthorized')
    expectError(await payout(app, { actor: actor.did }), 403, 'AppUnauthorized')
  })

  it('an app not configured in the requested environment → 403 AppUnauthorized', async () => {
    const app = await stack.newApp({ environments: ['test'] })
    const actor = await stack.newActor({ environment: 'live', payoutStatus: 'ready' })
    expectError(await payout(app, { actor: actor.did, environment: 'live' }), 403, 'AppUnauthorized')
  })

  it('an environment other than test or live → 400 InvalidRequest', async () => {
    const app = await stack.newApp()
    const actor = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
    expectError(await payout(app, { actor: actor.did, environment: 'prod' }), 400, 'InvalidRequest', /environment/)
  })

  it('environment omitted: the app’s only configured environment is used', async () => {
    const liveOnly = await stack.newApp({ environments: ['live'] })
    const did = `did:plc:envdefault${Date.now()}`
    await stack.newActor({ did, environment: 'test', payoutStatus: 'ready' })
    await stack.newActor({ did, environment: 'live', payoutStatus: 'pending-verification' })
    expect(expectOk(await payout(liveOnly, { actor: did }))).toEqual({ actor: did, payable: false, status: 'pending-verification' })
    const testOnly = await stack.newApp({ environments: ['test'] })
    expect(expectOk(await payout(testOnly, { actor: did }))).toEqual({ actor: did, payable: true, status: 'ready' })
  })

  it('environment omitted by an app configured for test and live → 400 InvalidRequest', async () => {
    const both = await stack.newApp({ environments: ['test', 'live'] })
    const actor = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
    expectError(await payout(both, { actor: actor.did }), 400, 'InvalidRequest', /^environment is required: this app is configured for test and live$/)
    expect(expectOk(await payout(both, { actor: actor.did, environment: 'test' }))).toEqual({ actor: actor.did, payable: true, status: 'ready' })
  })

  it('test and live are isolated: ready in test is unknown in live, and live keeps its own status', async () => {
    const both = await stack.newApp({ environments: ['test', 'live'] })
    const actor = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
    expectError(await payout(both, { actor: actor.did, environment: 'live' }), 404, 'ActorNotFound')
    await stack.newActor({ did: actor.did, environment: 'live', payoutStatus: 'restricted' })
    expect(expectOk(await payout(both, { actor: actor.did, environment: 'live' }))).toEqual({ actor: actor.did, payable: false, status: 'restricted' })
    expect(expectOk(await payout(both, { actor: actor.did, environment: 'test' }))).toEqual({ actor: actor.did, payable: true, status: 'ready' })
  })

  it('actors are not per app: every app sees the same actor, but only in environments it is configured for', async () => {
    const a = await stack.newApp({ environments: ['test'] })
    const b = await stack.newApp({ environments: ['test', 'live'] })
    const liveOnly = await stack.newApp({ environments: ['live'] })
    const actor = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
    const expected = { actor: actor.did, payable: true, status: 'ready' }
    expect(expectOk(await payout(a, { actor: actor.did, environment: 'test' }))).toEqual(expected)
    expect(expectOk(await payout(b, { actor: actor.did, environment: 'test' }))).toEqual(expected)
    expectError(await payout(liveOnly, { actor: actor.did, environment: 'test' }), 403, 'AppUnauthorized')
    // a change is seen by every app at once
    await stack.newActor({ did: actor.did, environment: 'test', payoutStatus: 'restricted' })
    expect(expectOk(await payout(a, { actor: actor.did, environment: 'test' }))).toEqual({ ...expected, payable: false, status: 'restricted' })
    expect(expectOk(await payout(b, { actor: actor.did, environment: 'test' }))).toEqual({ ...expected, payable: false, status: 'restricted' })
  })

  it('a JWT minted for another method is refused before anything is read', async () => {
    const app = await stack.newApp()
    const actor = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
    const res = await xrpcGet(stack, PAYOUT, { actor: actor.did }, bearer(await app.jwt(PROFILE)))
    expectError(res, 401, 'BadJwtLexiconMethod')
  })
})

describe('getProfile', () => {
  it('returns did, displayName, payable, paymentTypes and createdAt, exactly', async () => {
    const app = await stack.newApp()
    const before = Date.now()
    const actor = await stack.newActor({ environment: 'test', payoutStatus: 'ready', displayName: 'Ada’s Studio', kind: 'project', paymentTypes: ['tip'] })
    const body = expectOk(await profile(app, { actor: actor.did, environment: 'test' }))
    expect(body).toEqual({ did: actor.did, displayName: 'Ada’s Studio', payable: true, paymentTypes: ['tip'], createdAt: actor.createdAt })
    expect(Date.parse(body.createdAt)).toBeGreaterThanOrEqual(before - 1000)
  })

  it('leaves displayName out when unknown, with the default payment types and payable false until ready', async () => {
    const app = await stack.newApp({ environments: ['live'] })
    const actor = await stack.newActor({ environment: 'live' })
    expect(expectOk(await profile(app, { actor: actor.did }))).toEqual({
      did: actor.did,
      payable: false,
      paymentTypes: ['tip', 'shop'],
      createdAt: actor.createdAt,
    })
  })

  it('ActorNotFound, AppUnauthorized and the environment rule as getPayoutStatus', async () => {
    const app = await stack.newApp({ environments: ['test', 'live'] })
    const actor = await stack.newActor({ environment: 'test', displayName: 'Only test' })
    expectError(await profile(app, { actor: actor.did, environment: 'live' }), 404, 'ActorNotFound')
    expectError(await profile(app, { actor: actor.did }), 400, 'InvalidRequest', /environment is required/)
    expectError(await profile(await stack.newApp({ environments: [] }), { actor: actor.did, environment: 'test' }), 403, 'AppUnauthorized')
    expectError(await profile(await stack.newApp({ environments: ['live'] }), { actor: actor.did, environment: 'test' }), 403, 'AppUnauthorized')
  })

  it('the actor parameter is required by the lexicon → 400 InvalidRequest', async () => {
    const app = await stack.newApp()
    expectError(await profile(app, {}), 400, 'InvalidRequest', /actor/)
  })
})

describe('through the mercurius gateway', () => {
  async function gatewayQuery(caller: Principal, query: string, variables: Record<string, unknown> = {}) {
    const res = await fetch(stack.gatewayUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'svc-context': signedContext(stack.secrets.callerKeys, caller) },
      body: JSON.stringify({ query, variables }),
    })
    return { status: res.status, body: (await res.json()) as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] } }
  }

  it('one request checks the app (apps subgraph) and reads the actor in its environment (actors subgraph)', async () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    expect(require('graphql/package.json').version).toBe('16.11.0')
    const app = await stack.newApp({ environments: ['live'] })
    const actor = await stack.newActor({ environment: 'live', payoutStatus: 'ready', displayName: 'Gw' })
    const res = await gatewayQuery(
      { kind: 'app', appDid: app.did },
      `query Q($environment: String, $actor: String!) {
        appAccess(environment: $environment) {
          appDid environment
          payoutStatus(actor: $actor) { actor payable status }
          profile(actor: $actor) { did displayName kind environment }
        }
      }`,
      { environment: null, actor: actor.did },
    )
    expect(res.body.errors).toBeUndefined()
    expect(res.body.data).toEqual({
      appAccess: {
        appDid: app.did,
        environment: 'live',
        payoutStatus: { actor: actor.did, payable: true, status: 'ready' },
        profile: { did: actor.did, displayName: 'Gw', kind: 'creator', environment: 'live' },
      },
    })
  })

  it('the actors subgraph never reads for an app the apps subgraph refused', async () => {
    const unregistered = await stack.newApp({ environments: [] })
    const actor = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
    const res = await gatewayQuery(
      { kind: 'app', appDid: unregistered.did },
      `{ appAccess(environment: "test") { payoutStatus(actor: "${actor.did}") { actor status } } }`,
    )
    expect(res.body.data ?? null).toBeNull()
    expect(res.body.errors?.[0]?.extensions?.code).toBe('AppNotRegistered')
  })

  it('the operator read of an actor is for operators only', async () => {
    const actor = await stack.newActor({ environment: 'test', payoutStatus: 'pending-verification' })
    const query = `{ actor(did: "${actor.did}", environment: "test") { did payoutStatus payable } }`
    const asApp = await gatewayQuery({ kind: 'app', appDid: (await stack.newApp()).did }, query)
    expect(asApp.body.errors?.[0]?.extensions?.code).toBe('NotAllowed')
    const res = await fetch(stack.gatewayUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer(stack.secrets.operatorToken) },
      body: JSON.stringify({ query }),
    })
    expect(await res.json()).toEqual({ data: { actor: { did: actor.did, payoutStatus: 'pending-verification', payable: false } } })
  })
})
