/**
 * Recipient approvals in the apps domain, on the test FerretDB (no mocks): the app's idempotent request, its
 * validation (refusals change nothing), concurrent duplicates on the unique index, terms changes, and the creator's
 * dashboard decisions with their outbox events.
 */
import { createHash } from 'node:crypto'
import type mongoose from 'mongoose'
import { contractError, isolate } from '@svc/testing'
import { connectApps, type AppsModels } from '../src'
import { registerApp } from '../src/domain/registration'
import type { ActorFacts } from '../src/domain/actor-facts'
import {
  acceptApproval,
  approvalUrls,
  blockApproval,
  canonicalJson,
  declineApproval,
  DUE_EVENT_GRACE_MS,
  effectiveStatus,
  findAppApproval,
  getDashboardApproval,
  listDashboardApprovals,
  requestRecipientApproval,
  revokeApproval,
  termsHashOf,
  unblockApproval,
  writeDueApprovalEvents,
  type DashboardActor,
  type RecipientApprovalInput,
} from '../src/domain/recipient-approvals'

let conn: mongoose.Connection
let models: AppsModels
/** The actors domain's answer in these domain tests: every recipient is a known actor (the real read is tested end to end). */
const knownActors: ActorFacts = { actor: async (did) => ({ did, payoutStatus: 'ready' }) }
let seq = 0
const uniq = () => `${++seq}${Date.now().toString(36)}`
const newAppDid = () => `did:web:app${uniq()}.example.com`
const newCreator = () => `did:plc:creator${uniq()}`


async function newApp(opts: { environments?: ('test' | 'live')[]; feeShareBps?: number } = {}): Promise<string> {
  const did = newAppDid()
  for (const environment of opts.environments ?? ['test']) {
    await registerApp({ models }, { did, environment, appUrl: 'https://app.example.com', feeShareBps: opts.feeShareBps ?? 500, name: 'Approvals app' })
  }
  return did
}

const input = (recipientDid: string, over: Partial<RecipientApprovalInput> = {}): RecipientApprovalInput => ({
  environment: 'test',
  recipientDid,
  paymentTypes: ['tip'],
  ...over,
})
const creatorOf = (recipientDid: string, environment: 'test' | 'live' = 'test'): DashboardActor => ({ actorDid: recipientDid, environment })
const raw = (id: string) => models.RecipientApproval.findOne({ id }).lean()
const events = (approvalId: string) => models.Outbox.find({ 'data.approvalId': approvalId }).sort({ occurredAt: 1 }).lean()
/** The models with an outbox whose writes fail, as when the database goes away after the move's own write. */
const outboxAway = (): AppsModels => ({
  ...models,
  Outbox: new Proxy(models.Outbox, {
    get: (target, prop, receiver) => (prop === 'create' ? async () => Promise.reject(new Error('database away')) : Reflect.get(target, prop, receiver)),
  }),
})

beforeAll(async () => {
  ;({ conn, models } = await connectApps(isolate('apps_approvals').mongoUrl))
})

afterAll(async () => {
  await conn?.dropDatabase().catch(() => undefined)
  await conn?.close()
})

describe('terms hash', () => {
  test('sha256 hex of the canonical JSON of the sorted payment types, fee share and public records', () => {
    const expected = createHash('sha256')
      .update('{"feeShareBps":300,"paymentTypes":["shop","tip"],"publicRecords":{"attestation":"public","enabled":true}}')
      .digest('hex')
    expect(termsHashOf({ paymentTypes: ['tip', 'shop'], feeShareBps: 300, publicRecords: { enabled: true, attestation: 'public' } })).toBe(expected)
    expect(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }] })).toBe('{"a":[{"c":2,"d":1}],"b":1}')
  })

  test('each term changes the hash', () => {
    const base = { paymentTypes: ['tip' as const], feeShareBps: 100, publicRecords: { enabled: false, attestation: 'public' as const } }
    const hashes = new Set([
      termsHashOf(base),
      termsHashOf({ ...base, paymentTypes: ['tip', 'shop'] }),
      termsHashOf({ ...base, feeShareBps: 101 }),
      termsHashOf({ ...base, publicRecords: { enabled: true, attestation: 'public' } }),
      termsHashOf({ ...base, publicRecords: { enabled: false, attestation: 'private' } }),
    ])
    expect(hashes.size).toBe(5)
  })
})

describe('requestRecipientApproval: creation', () => {
  test('a first request is pending, revision 1, apr_ id, sorted and deduplicated types, defaults from the registration', async () => {
    const app = await newApp()
    const creator = newCreator()
    const view = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { paymentTypes: ['tip', 'shop', 'tip'], requestReason: 'Tips on streams' }))
    expect(view).toEqual({
      id: expect.stringMatching(/^apr_[0-9A-Za-z]{24}$/),
      appDid: app,
      recipientDid: creator,
      environment: 'test',
      status: 'pending',
      paymentTypes: ['shop', 'tip'],
      feeShareBps: 500,
      publicRecords: { enabled: false, defaults: { attestation: 'public' } },
      requestReason: 'Tips on streams',
      setupReturnUrl: null,
      termsHash: termsHashOf({ paymentTypes: ['shop', 'tip'], feeShareBps: 500, publicRecords: { enabled: false, attestation: 'public' } }),
      revision: 1,
      approvedAt: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    })
    const doc = await raw(view.id)
    expect(doc).toMatchObject({ appDid: app, recipientDid: creator, environment: 'test', status: 'pending', revision: 1 })
    expect(doc?.approvedTermsHash ?? null).toBeNull()
  })

  test('every payment type, a lower fee share, public records and a return URL on the app origin are accepted', async () => {
    const app = await newApp()
    const view = await requestRecipientApproval(
      { models, facts: knownActors },
      app,
      input(newCreator(), {
        paymentTypes: ['ticket', 'subscription', 'tip', 'shop'],
        feeShareBps: 0,
        publicRecords: { enabled: true, defaults: { attestation: 'private' } },
        setupReturnUrl: 'https://APP.example.com/creators/done?x=1',
      }),
    )
    expect(view).toMatchObject({
      paymentTypes: ['shop', 'subscription', 'ticket', 'tip'],
      feeShareBps: 0,
      publicRecords: { enabled: true, defaults: { attestation: 'private' } },
      setupReturnUrl: 'https://app.example.com/creators/done?x=1',
    })
  })

  test('the registered fee share itself and a 500-character reason are accepted', async () => {
    const app = await newApp({ feeShareBps: 10000 })
    const reason = '🎉'.repeat(500) // 500 characters (graphemes), 2000 bytes
    const view = await requestRecipientApproval({ models, facts: knownActors }, app, input(newCreator(), { feeShareBps: 10000, requestReason: reason }))
    expect(view).toMatchObject({ feeShareBps: 10000, requestReason: reason })
  })

  test('a reason on several lines, in a right-to-left script, is accepted', async () => {
    const reason = 'شكراً\nTips on streams\tand shop'
    const view = await requestRecipientApproval({ models, facts: knownActors }, await newApp(), input(newCreator(), { requestReason: reason }))
    expect(view).toMatchObject({ requestReason: reason })
  })

  test('the dashboard and onboarding URLs of a request', () => {
    expect(approvalUrls('http://127.0.0.1:4001/dashboard/', 'apr_x')).toEqual({
      dashboardUrl: 'http://127.0.0.1:4001/dashboard/approvals/apr_x',
      onboardingUrl: 'http://127.0.0.1:4001/dashboard/onboarding/apr_x',
    })
  })

  test('test and live are separate requests; reading never creates one', async () => {
    const app = await newApp({ environments: ['test', 'live'] })
    const creator = newCreator()
    expect(await findAppApproval({ models }, app, 'test', creator)).toBeNull()
    expect(await models.RecipientApproval.countDocuments({ appDid: app })).toBe(0)
    const test = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))
    const live = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { environment: 'live' }))
    expect(live.id).not.toBe(test.id)
    expect(await findAppApproval({ models }, app, 'test', creator)).toMatchObject({ id: test.id, environment: 'test' })
    expect(await findAppApproval({ models }, app, 'live', creator)).toMatchObject({ id: live.id, environment: 'live' })
    expect(await findAppApproval({ models }, newAppDid(), 'test', creator)).toBeNull()
  })
})

describe('requestRecipientApproval: refusals change nothing', () => {
  let app: string
  let creator: string
  let id: string
  beforeAll(async () => {
    app = await newApp()
    creator = newCreator()
    id = (await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { feeShareBps: 100, requestReason: 'first' }))).id
  })

  test.each<[string, string, Partial<RecipientApprovalInput>]>([
    ['an unknown environment', 'InvalidRequest', { environment: 'prod' }],
    ['a recipient that is not a DID', 'InvalidRequest', { recipientDid: 'alice' }],
    ['an empty recipient', 'InvalidRequest', { recipientDid: '' }],
    ['no payment types', 'InvalidRequest', { paymentTypes: [] }],
    ['an unknown payment type', 'InvalidRequest', { paymentTypes: ['tip', 'gift'] }],
    ['an uppercase payment type', 'InvalidRequest', { paymentTypes: ['TIP'] }],
    ['a negative fee share', 'InvalidRequest', { feeShareBps: -1 }],
    ['a fee share above 10000', 'InvalidRequest', { feeShareBps: 10001 }],
    ['a fractional fee share', 'InvalidRequest', { feeShareBps: 12.5 }],
    ['a fee share above the registered 500', 'InvalidRequest', { feeShareBps: 501 }],
    ['an unknown attestation default', 'InvalidRequest', { publicRecords: { enabled: true, defaults: { attestation: 'loud' } } }],
    ['a reason of 501 characters', 'InvalidRequest', { requestReason: 'x'.repeat(501) }],
    ['a reason with a right-to-left override', 'InvalidRequest', { requestReason: 'Tips \u202Esmaerts no' }],
    ['a reason with a control character', 'InvalidRequest', { requestReason: 'Tips\u0007' }],
    ['a return URL longer than 2048', 'InvalidRequest', { setupReturnUrl: `https://app.example.com/${'a'.repeat(2048)}` }],
    ['a return URL longer than 2048 once percent-encoded', 'InvalidRequest', { setupReturnUrl: `https://app.example.com/${'€'.repeat(300)}` }],
    ['a return URL off the app origin', 'AppUrlNotAllowed', { setupReturnUrl: 'https://evil.example/steal' }],
    ['a return URL on a subdomain of the app origin', 'AppUrlNotAllowed', { setupReturnUrl: 'https://x.app.example.com/back' }],
    ['a return URL on another scheme of the origin', 'AppUrlNotAllowed', { setupReturnUrl: 'http://app.example.com/back' }],
    ['a return URL on another port of the origin', 'AppUrlNotAllowed', { setupReturnUrl: 'https://app.example.com:8443/back' }],
    ['a relative return URL', 'AppUrlNotAllowed', { setupReturnUrl: '/creators/done' }],
    ['a return URL that is not a URL', 'AppUrlNotAllowed', { setupReturnUrl: 'not a url' }],
    ['a javascript: return URL', 'AppUrlNotAllowed', { setupReturnUrl: 'javascript:alert(1)' }],
    ['a return URL with credentials', 'AppUrlNotAllowed', { setupReturnUrl: 'https://user:pw@app.example.com/back' }],
  ])('%s → %s', async (_label, code, change) => {
    const before = await raw(id)
    const countBefore = await models.RecipientApproval.countDocuments({})
    const err = await contractError(requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { feeShareBps: 100, requestReason: 'changed', ...change })))
    expect(err.code).toBe(code)
    expect(err.status).toBe(400)
    expect(await raw(id)).toEqual(before)
    expect(await models.RecipientApproval.countDocuments({})).toBe(countBefore)
  })

  test('the app itself as recipient → InvalidRequest (an app selling for itself needs no approval)', async () => {
    const err = await contractError(requestRecipientApproval({ models, facts: knownActors }, app, input(app)))
    expect(err.code).toBe('InvalidRequest')
    // also when the app is no actor: the request is refused for what it is, not for a missing recipient
    const noActor = await contractError(requestRecipientApproval({ models, facts: { actor: async () => null } }, app, input(app)))
    expect(noActor.code).toBe('InvalidRequest')
    expect(err.message).toMatch(/itself/)
    expect(await models.RecipientApproval.countDocuments({ recipientDid: app })).toBe(0)
  })

  test('an unregistered app → AppNotRegistered; an environment it is not configured in → AppEnvironmentNotConfigured', async () => {
    const stranger = newAppDid()
    expect((await contractError(requestRecipientApproval({ models, facts: knownActors }, stranger, input(creator)))).code).toBe('AppNotRegistered')
    expect((await contractError(requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { environment: 'live' })))).code).toBe('AppEnvironmentNotConfigured')
    expect(await models.RecipientApproval.countDocuments({ $or: [{ appDid: stranger }, { appDid: app, environment: 'live' }] })).toBe(0)
  })
})

describe('requestRecipientApproval: idempotency and concurrency', () => {
  test('20 parallel identical requests → exactly one document, one id', async () => {
    const app = await newApp()
    const creator = newCreator()
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { paymentTypes: ['shop', 'tip'] }))))
    expect(results.map((r) => r.status)).toEqual(Array(20).fill('fulfilled'))
    const views = results.map((r) => (r as PromiseFulfilledResult<Awaited<ReturnType<typeof requestRecipientApproval>>>).value)
    expect(new Set(views.map((v) => v.id)).size).toBe(1)
    expect(views.every((v) => v.status === 'pending' && v.revision === 1)).toBe(true)
    expect(await models.RecipientApproval.countDocuments({ appDid: app, recipientDid: creator })).toBe(1)
  })

  test('parallel requests with different terms → one document holding one of the sent terms, pending', async () => {
    const app = await newApp()
    const creator = newCreator()
    const shares = [100, 200, 300, 400, 500, 0, 50, 250]
    const results = await Promise.allSettled(shares.map((feeShareBps) => requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { feeShareBps }))))
    expect(results.map((r) => r.status)).toEqual(Array(shares.length).fill('fulfilled'))
    const ids = new Set(results.map((r) => (r as PromiseFulfilledResult<{ id: string }>).value.id))
    expect(ids.size).toBe(1)
    const docs = await models.RecipientApproval.find({ appDid: app, recipientDid: creator }).lean()
    expect(docs).toHaveLength(1)
    expect(shares).toContain(docs[0]!.feeShareBps)
    expect(docs[0]!.status).toBe('pending')
    expect(docs[0]!.termsHash).toBe(termsHashOf({ paymentTypes: ['tip'], feeShareBps: docs[0]!.feeShareBps, publicRecords: { enabled: false, attestation: 'public' } }))
  })

  test('the same request again changes nothing; a new reason or return URL is updated and keeps the status', async () => {
    const app = await newApp()
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { requestReason: 'a' }))
    const again = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { requestReason: 'a' }))
    expect(again).toEqual(first)
    const updated = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { requestReason: 'b', setupReturnUrl: 'https://app.example.com/done' }))
    expect(updated).toMatchObject({ id: first.id, status: 'pending', revision: 1, requestReason: 'b', setupReturnUrl: 'https://app.example.com/done', termsHash: first.termsHash })
  })
})

describe('terms changes and repeats after decisions', () => {
  test('approved stays approved with the same terms; different terms → pending, approvedAt cleared, revision + 1', async () => {
    const app = await newApp()
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { feeShareBps: 100 }))
    const approved = await acceptApproval({ models }, creatorOf(creator), first.id, first.termsHash)
    expect(approved).toMatchObject({ status: 'approved', approvedAt: expect.any(String), revision: 1 })

    const same = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { feeShareBps: 100, requestReason: 'reminder' }))
    expect(same).toMatchObject({ id: first.id, status: 'approved', approvedAt: approved.approvedAt, revision: 1, requestReason: 'reminder' })

    const changed = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { feeShareBps: 200 }))
    expect(changed).toMatchObject({ id: first.id, status: 'pending', approvedAt: null, revision: 2, feeShareBps: 200 })
    expect(changed.termsHash).not.toBe(first.termsHash)
    const doc = await raw(first.id)
    expect(doc).toMatchObject({ status: 'pending', approvedAt: null, approvedTermsHash: null, revision: 2 })

    // the old terms can no longer be accepted; the new ones can
    expect((await contractError(acceptApproval({ models }, creatorOf(creator), first.id, first.termsHash))).code).toBe('ApprovalTermsChanged')
    expect((await raw(first.id))?.status).toBe('pending')
    expect(await acceptApproval({ models }, creatorOf(creator), first.id, changed.termsHash)).toMatchObject({ status: 'approved', revision: 2 })
    expect((await events(first.id)).map((e) => e.key)).toEqual([`app.authorization.granted:${first.id}:1`, `app.authorization.granted:${first.id}:2`])
  })

  test('after an operator lowers the app\'s share, the same request again keeps the approval (omitted or explicit share); a new share above the cap is refused', async () => {
    const app = await newApp({ feeShareBps: 500 })
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))
    expect(first.feeShareBps).toBe(500)
    const approved = await acceptApproval({ models }, creatorOf(creator), first.id, first.termsHash)
    await registerApp({ models }, { did: app, environment: 'test', appUrl: 'https://app.example.com', feeShareBps: 400, name: 'Approvals app' })

    for (const again of [input(creator), input(creator, { feeShareBps: 500 })]) {
      expect(await requestRecipientApproval({ models, facts: knownActors }, app, again)).toMatchObject({ id: first.id, status: 'approved', feeShareBps: 500, termsHash: first.termsHash, revision: 1 })
    }
    expect(await raw(first.id)).toMatchObject({ status: 'approved', approvedAt: new Date(approved.approvedAt!), revision: 1 })
    expect((await contractError(requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { feeShareBps: 450 })))).code).toBe('InvalidRequest')
    // a lower share is new terms, as before
    expect(await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { feeShareBps: 300 }))).toMatchObject({ status: 'pending', revision: 2, feeShareBps: 300 })
    // a first request of another creator takes the registered share now
    expect((await requestRecipientApproval({ models, facts: knownActors }, app, input(newCreator()))).feeShareBps).toBe(400)
  })

  test('pending stays pending with the same terms', async () => {
    const app = await newApp()
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))
    expect(await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { requestReason: 'again' }))).toMatchObject({ status: 'pending', revision: 1 })
    expect((await raw(first.id))?.revision).toBe(1)
  })

  test('declined → the app asks again → pending, revision + 1', async () => {
    const app = await newApp()
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))
    await declineApproval({ models }, creatorOf(creator), first.id)
    expect(await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))).toMatchObject({ id: first.id, status: 'pending', revision: 2 })
  })

  test('revoked → the app asks again → pending; accepting it writes a new granted event', async () => {
    const app = await newApp()
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))
    await acceptApproval({ models }, creatorOf(creator), first.id, first.termsHash)
    expect(await revokeApproval({ models }, creatorOf(creator), first.id)).toMatchObject({ status: 'revoked', revision: 2, approvedAt: null })
    const again = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))
    expect(again).toMatchObject({ status: 'pending', revision: 3 })
    await acceptApproval({ models }, creatorOf(creator), first.id, again.termsHash)
    expect((await events(first.id)).map((e) => e.key)).toEqual([
      `app.authorization.granted:${first.id}:1`,
      `app.authorization.revoked:${first.id}:1`,
      `app.authorization.granted:${first.id}:3`,
    ])
  })

  test('blocked → RecipientAppApprovalBlocked with the same or other terms, and nothing changes; unblock lets the app ask again', async () => {
    const app = await newApp()
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { requestReason: 'please' }))
    await blockApproval({ models }, creatorOf(creator), first.id)
    const before = await raw(first.id)
    for (const over of [{ requestReason: 'please' }, { requestReason: 'pretty please', feeShareBps: 1, paymentTypes: ['shop'] }]) {
      const err = await contractError(requestRecipientApproval({ models, facts: knownActors }, app, input(creator, over)))
      expect(err.code).toBe('RecipientAppApprovalBlocked')
      expect(err.status).toBe(403)
    }
    expect(await raw(first.id)).toEqual(before)
    expect(await unblockApproval({ models }, creatorOf(creator), first.id)).toMatchObject({ status: 'declined' })
    expect(await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))).toMatchObject({ id: first.id, status: 'pending', revision: 2 })
  })

  test('a stored approval of other terms never counts as approved', async () => {
    const app = await newApp()
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))
    await models.RecipientApproval.updateOne({ id: first.id }, { $set: { status: 'approved', approvedTermsHash: 'f'.repeat(64), approvedAt: new Date() } })
    const doc = await raw(first.id)
    expect(effectiveStatus(doc!)).toBe('pending')
    expect(await findAppApproval({ models }, app, 'test', creator)).toMatchObject({ status: 'pending', approvedAt: null })
    // accepting the current terms makes it a real approval
    expect(await acceptApproval({ models }, creatorOf(creator), first.id, first.termsHash)).toMatchObject({ status: 'approved' })
    expect((await raw(first.id))?.approvedTermsHash).toBe(first.termsHash)
  })
})

describe('the creator decides (dashboard)', () => {
  async function pending() {
    const app = await newApp({ environments: ['test', 'live'] })
    const creator = newCreator()
    const view = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { paymentTypes: ['tip', 'shop'], feeShareBps: 250, publicRecords: { enabled: true } }))
    return { app, creator, who: creatorOf(creator), view }
  }

  test('only requests addressed to the signed-in creator in its environment: NotFound otherwise, and nothing changes', async () => {
    const { creator, view } = await pending()
    const before = await raw(view.id)
    const strangers: DashboardActor[] = [creatorOf(newCreator()), creatorOf(creator, 'live')]
    for (const who of strangers) {
      expect((await contractError(getDashboardApproval({ models }, who, view.id))).code).toBe('NotFound')
      expect((await contractError(acceptApproval({ models }, who, view.id, view.termsHash))).code).toBe('NotFound')
      expect((await contractError(declineApproval({ models }, who, view.id))).code).toBe('NotFound')
      expect((await contractError(revokeApproval({ models }, who, view.id))).code).toBe('NotFound')
      expect((await contractError(blockApproval({ models }, who, view.id))).code).toBe('NotFound')
      expect((await contractError(unblockApproval({ models }, who, view.id))).code).toBe('NotFound')
    }
    expect((await contractError(getDashboardApproval({ models }, creatorOf(creator), 'apr_doesnotexist'))).code).toBe('NotFound')
    expect(await raw(view.id)).toEqual(before)
    expect(await events(view.id)).toEqual([])
  })

  test('accept: pending → approved with one app.authorization.granted event; accepting again changes nothing', async () => {
    const { app, creator, who, view } = await pending()
    const approved = await acceptApproval({ models }, who, view.id, view.termsHash)
    expect(approved).toMatchObject({ id: view.id, status: 'approved', revision: 1, approvedAt: expect.any(String) })
    const doc = await raw(view.id)
    expect(doc).toMatchObject({ status: 'approved', approvedTermsHash: view.termsHash })
    const evts = await events(view.id)
    expect(evts).toHaveLength(1)
    expect(evts[0]).toMatchObject({
      type: 'app.authorization.granted',
      key: `app.authorization.granted:${view.id}:1`,
      appDid: app,
      environment: 'test',
      relayedAt: null,
      data: {
        approvalId: view.id,
        recipientDid: creator,
        paymentTypes: ['shop', 'tip'],
        feeShareBps: 250,
        publicRecords: { enabled: true, defaults: { attestation: 'public' } },
        approvedAt: approved.approvedAt,
      },
    })
    expect(evts[0]!._id).toMatch(/^evt_[0-9a-f]{32}$/)

    const again = await acceptApproval({ models }, who, view.id, view.termsHash)
    expect(again).toEqual(approved)
    expect(await events(view.id)).toHaveLength(1)
  })

  test('two (and ten) concurrent accepts write one event, and the request agrees with it', async () => {
    for (const n of [2, 10]) {
      const { who, view } = await pending()
      const results = await Promise.allSettled(Array.from({ length: n }, () => acceptApproval({ models }, who, view.id, view.termsHash)))
      expect(results.map((r) => r.status)).toEqual(Array(n).fill('fulfilled'))
      const evts = await events(view.id)
      expect(evts).toHaveLength(1)
      const doc = await raw(view.id)
      expect(doc?.status).toBe('approved')
      expect(doc?.approvedAt?.toISOString()).toBe((evts[0]!.data as { approvedAt: string }).approvedAt)
    }
  })

  test('accept refuses changed terms (ApprovalTermsChanged), blocked and revoked requests (NotAllowed), changing nothing', async () => {
    const { who, view } = await pending()
    const wrong = await contractError(acceptApproval({ models }, who, view.id, 'f'.repeat(64)))
    expect(wrong.code).toBe('ApprovalTermsChanged')
    expect(wrong.status).toBe(409)
    expect((await raw(view.id))?.status).toBe('pending')

    await acceptApproval({ models }, who, view.id, view.termsHash)
    await revokeApproval({ models }, who, view.id)
    const revoked = await raw(view.id)
    expect((await contractError(acceptApproval({ models }, who, view.id, view.termsHash))).code).toBe('NotAllowed')
    expect(await raw(view.id)).toEqual(revoked)

    await blockApproval({ models }, who, view.id)
    const blocked = await raw(view.id)
    expect((await contractError(acceptApproval({ models }, who, view.id, view.termsHash))).code).toBe('NotAllowed')
    expect(await raw(view.id)).toEqual(blocked)
  })

  test('decline: pending → declined (again: unchanged); accept from declined is allowed', async () => {
    const { who, view } = await pending()
    expect(await declineApproval({ models }, who, view.id)).toMatchObject({ status: 'declined', revision: 1 })
    expect(await declineApproval({ models }, who, view.id)).toMatchObject({ status: 'declined', revision: 1 })
    expect(await events(view.id)).toEqual([])
    expect(await acceptApproval({ models }, who, view.id, view.termsHash)).toMatchObject({ status: 'approved' })
    expect((await contractError(declineApproval({ models }, who, view.id))).code).toBe('NotAllowed') // approved: revoke instead
  })

  test('revoke: approved → revoked with one app.authorization.revoked event, revision + 1; only from approved', async () => {
    const { app, creator, who, view } = await pending()
    expect((await contractError(revokeApproval({ models }, who, view.id))).code).toBe('NotAllowed') // pending
    await acceptApproval({ models }, who, view.id, view.termsHash)
    const revoked = await revokeApproval({ models }, who, view.id)
    expect(revoked).toMatchObject({ status: 'revoked', revision: 2, approvedAt: null })
    expect(await raw(view.id)).toMatchObject({ approvedTermsHash: null, approvedAt: null, revokedRevision: 1 })
    expect(await revokeApproval({ models }, who, view.id)).toMatchObject({ status: 'revoked', revision: 2 }) // again: unchanged
    const evts = await events(view.id)
    expect(evts.map((e) => e.type)).toEqual(['app.authorization.granted', 'app.authorization.revoked'])
    expect(evts[1]).toMatchObject({
      key: `app.authorization.revoked:${view.id}:1`,
      appDid: app,
      environment: 'test',
      data: { approvalId: view.id, recipientDid: creator, status: 'revoked', revokedAt: expect.any(String) },
    })
  })

  test('two concurrent revokes write one revoked event', async () => {
    const { who, view } = await pending()
    await acceptApproval({ models }, who, view.id, view.termsHash)
    const results = await Promise.allSettled([revokeApproval({ models }, who, view.id), revokeApproval({ models }, who, view.id)])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled'])
    expect((await events(view.id)).filter((e) => e.type === 'app.authorization.revoked')).toHaveLength(1)
    expect((await raw(view.id))?.status).toBe('revoked')
  })

  test('block: from approved also writes the revoked event; from pending none; blocking again changes nothing', async () => {
    const a = await pending()
    await acceptApproval({ models }, a.who, a.view.id, a.view.termsHash)
    expect(await blockApproval({ models }, a.who, a.view.id)).toMatchObject({ status: 'blocked', revision: 2, approvedAt: null })
    expect(await blockApproval({ models }, a.who, a.view.id)).toMatchObject({ status: 'blocked', revision: 2 })
    const aEvents = await events(a.view.id)
    expect(aEvents.map((e) => e.key)).toEqual([`app.authorization.granted:${a.view.id}:1`, `app.authorization.revoked:${a.view.id}:1`])
    expect(aEvents[1]!.data).toMatchObject({ status: 'blocked' })

    const b = await pending()
    expect(await blockApproval({ models }, b.who, b.view.id)).toMatchObject({ status: 'blocked', revision: 1 })
    expect(await events(b.view.id)).toEqual([])
    // declined and revoked requests can be blocked too
    const c = await pending()
    await declineApproval({ models }, c.who, c.view.id)
    expect(await blockApproval({ models }, c.who, c.view.id)).toMatchObject({ status: 'blocked' })
  })

  test('ten concurrent declines, and ten concurrent blocks of an approval, each decide once: one revision, one revoked event', async () => {
    const d = await pending()
    const declines = await Promise.allSettled(Array.from({ length: 10 }, () => declineApproval({ models }, d.who, d.view.id)))
    expect(declines.map((r) => r.status)).toEqual(Array(10).fill('fulfilled'))
    expect(await raw(d.view.id)).toMatchObject({ status: 'declined', revision: 1 })
    expect(await events(d.view.id)).toEqual([])

    const b = await pending()
    await acceptApproval({ models }, b.who, b.view.id, b.view.termsHash)
    const blocks = await Promise.allSettled(Array.from({ length: 10 }, () => blockApproval({ models }, b.who, b.view.id)))
    expect(blocks.map((r) => r.status)).toEqual(Array(10).fill('fulfilled'))
    expect(blocks.map((r) => (r as PromiseFulfilledResult<{ status: string; revision: number }>).value)).toEqual(Array(10).fill(expect.objectContaining({ status: 'blocked', revision: 2 })))
    const revoked = (await events(b.view.id)).filter((e) => e.type === 'app.authorization.revoked')
    expect(revoked).toHaveLength(1)
    expect(revoked[0]!.data).toMatchObject({ status: 'blocked' })
    const doc = await raw(b.view.id)
    expect(doc).toMatchObject({ status: 'blocked', revision: 2, revokedRevision: 1 })
    expect(doc?.revokedAt?.toISOString()).toBe((revoked[0]!.data as { revokedAt: string }).revokedAt)
  })

  test('unblock: blocked → declined; not from pending or approved; a second unblock (a form sent twice) changes nothing', async () => {
    const { who, view } = await pending()
    expect((await contractError(unblockApproval({ models }, who, view.id))).code).toBe('NotAllowed')
    await blockApproval({ models }, who, view.id)
    expect(await unblockApproval({ models }, who, view.id)).toMatchObject({ status: 'declined', revision: 1 })
    expect(await unblockApproval({ models }, who, view.id)).toMatchObject({ status: 'declined', revision: 1 })
    // declined → approved by the creator, as before
    expect(await acceptApproval({ models }, who, view.id, view.termsHash)).toMatchObject({ status: 'approved' })
    expect((await contractError(unblockApproval({ models }, who, view.id))).code).toBe('NotAllowed')
  })

  test('ten concurrent unblocks (a form sent ten times) decide once: declined, its revision unchanged, no event', async () => {
    const { who, view } = await pending()
    await blockApproval({ models }, who, view.id)
    const blocked = (await raw(view.id))!
    const eventsBefore = await events(view.id)
    const unblocks = await Promise.allSettled(Array.from({ length: 10 }, () => unblockApproval({ models }, who, view.id)))
    expect(unblocks.map((r) => r.status)).toEqual(Array(10).fill('fulfilled'))
    expect(unblocks.map((r) => (r as PromiseFulfilledResult<{ status: string; revision: number }>).value)).toEqual(Array(10).fill(expect.objectContaining({ status: 'declined', revision: blocked.revision })))
    expect(await raw(view.id)).toMatchObject({ status: 'declined', revision: blocked.revision })
    expect(await events(view.id)).toEqual(eventsBefore)
  })

  test('unblock of a block that ended an approval, or came after a revoke, leaves it revoked: accepted again only once the app asks again', async () => {
    for (const ending of ['block', 'revoke then block'] as const) {
      const { app, creator, who, view } = await pending()
      await acceptApproval({ models }, who, view.id, view.termsHash)
      if (ending === 'revoke then block') await revokeApproval({ models }, who, view.id)
      await blockApproval({ models }, who, view.id)
      expect(await unblockApproval({ models }, who, view.id)).toMatchObject({ status: 'revoked', revision: 2 })
      expect(await unblockApproval({ models }, who, view.id)).toMatchObject({ status: 'revoked', revision: 2 })
      // before, the unblock left it declined and the creator could accept the old terms: a grant the app never asked for again
      expect((await contractError(acceptApproval({ models }, who, view.id, view.termsHash))).code).toBe('NotAllowed')
      expect((await events(view.id)).map((e) => e.type)).toEqual(['app.authorization.granted', 'app.authorization.revoked'])
      const again = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { paymentTypes: ['tip', 'shop'], feeShareBps: 250, publicRecords: { enabled: true } }))
      expect(again).toMatchObject({ status: 'pending', revision: 3 })
      expect(await acceptApproval({ models }, who, view.id, again.termsHash)).toMatchObject({ status: 'approved', revision: 3 })
    }
    // a request the app asked for again after a revoke, then blocked while pending: unblocked, declined
    const { app, creator, who, view } = await pending()
    await acceptApproval({ models }, who, view.id, view.termsHash)
    await revokeApproval({ models }, who, view.id)
    await requestRecipientApproval({ models, facts: knownActors }, app, input(creator, { paymentTypes: ['tip', 'shop'], feeShareBps: 250, publicRecords: { enabled: true } }))
    await blockApproval({ models }, who, view.id)
    expect(await unblockApproval({ models }, who, view.id)).toMatchObject({ status: 'declined', revision: 3 })
  })

  test('the dashboard list: requests addressed to the creator in its environment, newest first', async () => {
    const creator = newCreator()
    const apps = [await newApp({ environments: ['test', 'live'] }), await newApp(), await newApp()]
    const ids: string[] = []
    for (const app of apps) {
      ids.push((await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))).id)
      await new Promise((r) => setTimeout(r, 5))
    }
    await requestRecipientApproval({ models, facts: knownActors }, apps[0]!, input(creator, { environment: 'live' }))
    await requestRecipientApproval({ models, facts: knownActors }, apps[1]!, input(newCreator()))
    const list = await listDashboardApprovals({ models }, creatorOf(creator))
    expect(list.map((a) => a.id)).toEqual([...ids].reverse())
    expect(list.every((a) => a.recipientDid === creator && a.environment === 'test')).toBe(true)
    expect(await listDashboardApprovals({ models }, creatorOf(creator, 'live'))).toHaveLength(1)
  })
})

describe('an app repeating its request while the creator decides', () => {
  it('a revoke in the middle of 16 concurrent repeats (same terms, other reasons) stands: the request never reads approved again (revoked, or pending once asked again)', async () => {
    for (let round = 0; round < 16; round++) {
      const app = await newApp()
      const creator = newCreator()
      const serving = { models, facts: knownActors }
      const first = await requestRecipientApproval(serving, app, input(creator))
      await acceptApproval({ models }, creatorOf(creator), first.id, first.termsHash)
      const repeats = Array.from({ length: 16 }, (_, i) => requestRecipientApproval(serving, app, input(creator, { requestReason: i % 2 ? 'a' : 'b' })))
      const revoked = revokeApproval({ models }, creatorOf(creator), first.id)
      await Promise.allSettled([...repeats, revoked])
      // revoked, or pending again where a repeat came after the revoke (the app asking again): never approved
      expect({ round, status: effectiveStatus((await raw(first.id))!) }).toEqual({ round, status: expect.stringMatching(/^(revoked|pending)$/) })
      expect((await findAppApproval({ models }, app, 'test', creator))?.status).not.toBe('approved')
    }
  }, 60_000)
})

describe('a move whose event write was lost', () => {
  it('an accept or a revoke cut off before its event (an error page for the creator) gets the event from the next read of the request, once', async () => {
    const app = await newApp()
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))
    const failing = outboxAway()
    const types = async () => (await events(first.id)).map((e) => e.type)

    await expect(acceptApproval({ models: failing }, creatorOf(creator), first.id, first.termsHash)).rejects.toThrow('database away')
    expect(effectiveStatus((await raw(first.id))!)).toBe('approved')
    expect(await types()).toEqual([])
    // the creator reloads the page: it shows approved, with no button that would repeat the accept
    await getDashboardApproval({ models }, creatorOf(creator), first.id)
    expect(await types()).toEqual(['app.authorization.granted'])

    await expect(revokeApproval({ models: failing }, creatorOf(creator), first.id)).rejects.toThrow('database away')
    expect(await types()).toEqual(['app.authorization.granted'])
    // the app reads its request
    expect((await findAppApproval({ models }, app, 'test', creator))?.status).toBe('revoked')
    expect(await types()).toEqual(['app.authorization.granted', 'app.authorization.revoked'])
    // written once: later reads write nothing more
    await getDashboardApproval({ models }, creatorOf(creator), first.id)
    await findAppApproval({ models }, app, 'test', creator)
    expect(await models.Outbox.countDocuments({ 'data.approvalId': first.id })).toBe(2)
  })

  it('a repeated accept, revoke or block writes an event still due, and none once it was written (a stale form posted after the event left the outbox)', async () => {
    const app = await newApp()
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))
    const who = creatorOf(creator)
    const types = async () => (await events(first.id)).map((e) => e.type)
    // lost, then repeated: the repeat writes it
    await expect(acceptApproval({ models: outboxAway() }, who, first.id, first.termsHash)).rejects.toThrow('database away')
    await acceptApproval({ models }, who, first.id, first.termsHash)
    expect(await types()).toEqual(['app.authorization.granted'])
    // the outbox keeps relayed events 7 days: gone, a stale Accept posted again writes nothing (before: the event again)
    await models.Outbox.deleteMany({ 'data.approvalId': first.id })
    expect(await acceptApproval({ models }, who, first.id, first.termsHash)).toMatchObject({ status: 'approved' })
    expect(await types()).toEqual([])

    await expect(revokeApproval({ models: outboxAway() }, who, first.id)).rejects.toThrow('database away')
    await revokeApproval({ models }, who, first.id)
    expect(await types()).toEqual(['app.authorization.revoked'])
    await models.Outbox.deleteMany({ 'data.approvalId': first.id })
    await revokeApproval({ models }, who, first.id)
    await blockApproval({ models }, who, first.id)
    await blockApproval({ models }, who, first.id)
    expect(await types()).toEqual([])
  })

  it('a revoke whose event is written only after the app asked again still says the approval was revoked', async () => {
    const app = await newApp()
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))
    await acceptApproval({ models }, creatorOf(creator), first.id, first.termsHash)
    await expect(revokeApproval({ models: outboxAway() }, creatorOf(creator), first.id)).rejects.toThrow('database away')
    // the app asks again with the same terms before anything read the request: pending
    expect((await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))).status).toBe('pending')
    await findAppApproval({ models }, app, 'test', creator)
    const revoked = (await events(first.id)).filter((e) => e.type === 'app.authorization.revoked')
    expect(revoked.map((e) => (e.data as { status: string }).status)).toEqual(['revoked'])
  })

  it('one that no read finishes (the app waits for the event) gets it from the apps sweep, once its move is 30 s old', async () => {
    const app = await newApp()
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))
    await expect(acceptApproval({ models: outboxAway() }, creatorOf(creator), first.id, first.termsHash)).rejects.toThrow('database away')
    // the dashboard's list of requests shows it approved, and writes nothing
    expect((await listDashboardApprovals({ models }, creatorOf(creator))).map((a) => a.status)).toEqual(['approved'])
    const granted = () => models.Outbox.countDocuments({ type: 'app.authorization.granted', 'data.approvalId': first.id })
    expect(await granted()).toBe(0)
    // within the grace the move may still be writing it
    await writeDueApprovalEvents({ models })
    expect(await granted()).toBe(0)
    expect(await writeDueApprovalEvents({ models }, new Date(Date.now() + DUE_EVENT_GRACE_MS + 1000))).toBeGreaterThanOrEqual(1)
    expect(await granted()).toBe(1)
    // done: the next run has nothing of it
    await writeDueApprovalEvents({ models }, new Date(Date.now() + DUE_EVENT_GRACE_MS + 1000))
    expect(await granted()).toBe(1)
    expect((await raw(first.id))!.grantedDue).toBeUndefined()
    expect((await raw(first.id))!.eventsDue).toBeUndefined()
  })

  it('the sweep finds a request by its eventsDue mark, which stays while either of its events is due', async () => {
    const app = await newApp()
    const creator = newCreator()
    const first = await requestRecipientApproval({ models, facts: knownActors }, app, input(creator))
    await acceptApproval({ models }, creatorOf(creator), first.id, first.termsHash)
    // a grant and then a revoke, both cut off before their events
    await models.RecipientApproval.updateOne({ id: first.id }, { $set: { grantedDue: 1 } })
    await expect(revokeApproval({ models: outboxAway() }, creatorOf(creator), first.id)).rejects.toThrow('database away')
    expect(await raw(first.id)).toMatchObject({ grantedDue: 1, revokedDue: 1, eventsDue: true })
    const later = new Date(Date.now() + DUE_EVENT_GRACE_MS + 1000)
    // the grant is one the request has moved past: dropped, and the revoke still due keeps the mark
    const find = models.RecipientApproval.find.bind(models.RecipientApproval)
    const queries: unknown[] = []
    const spy = jest.spyOn(models.RecipientApproval, 'find').mockImplementation(((filter: unknown, ...rest: unknown[]) => {
      queries.push(filter)
      return (find as (...args: unknown[]) => unknown)(filter, ...rest)
    }) as never)
    try {
      expect(await writeDueApprovalEvents({ models }, later)).toBeGreaterThanOrEqual(1)
    } finally {
      spy.mockRestore()
    }
    expect(queries).toEqual([{ eventsDue: true }])
    const after = (await raw(first.id))!
    expect([after.grantedDue, after.revokedDue, after.eventsDue]).toEqual([undefined, undefined, undefined])
    expect((await events(first.id)).map((e) => e.type)).toEqual(['app.authorization.granted', 'app.authorization.revoked'])
  })
})
