/**
 * Creator approval of apps through the whole stack: money.svc.app.requestRecipientApproval and
 * getRecipientApproval over XRPC (adapter → gateway → apps + actors subgraphs → FerretDB), and the creator's
 * decisions on the dashboard pages with a real session cookie. Every contract error, the idempotency scope
 * under parallel duplicates, terms changes, the dashboard-only acceptance, and test/live and app isolation.
 */
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk } from './helpers'
import { dashboardGet, dashboardPost, decide, getApproval, hiddenField, requestApproval, signInWithLink } from './payment-helpers'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('approvals')
})
afterAll(async () => {
  await stack.stop()
})

const approvals = () => stack.models.RecipientApproval

describe('requestRecipientApproval', () => {
  it('creates a pending apr_ request with the dashboard and onboarding URLs, and exactly the contract fields', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const body = expectOk(
      await requestApproval(stack, app, {
        recipientDid: creator.did,
        environment: 'test',
        paymentTypes: ['tip', 'shop'],
        feeShareBps: 300,
        publicRecords: { enabled: true, defaults: { attestation: 'public' } },
        requestReason: 'Tips during streams',
        setupReturnUrl: 'https://app.example.com/creators/setup-done',
      }),
    )
    expect(Object.keys(body).sort()).toEqual(['dashboardUrl', 'feeShareBps', 'id', 'onboardingUrl', 'paymentTypes', 'status'])
    expect(body).toEqual({
      id: expect.stringMatching(/^apr_[A-Za-z0-9]+$/),
      status: 'pending',
      dashboardUrl: `${stack.checkoutUrl}/dashboard/approvals/${body.id}`,
      onboardingUrl: `${stack.checkoutUrl}/dashboard/onboarding/${body.id}`,
      paymentTypes: ['shop', 'tip'],
      feeShareBps: 300,
    })
  })

  it('defaults feeShareBps to the registered share and takes the environment from the app configuration', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const body = expectOk(await requestApproval(stack, app, { recipientDid: creator.did, paymentTypes: ['tip'] }))
    expect(body.feeShareBps).toBe(500)
    expect(await approvals().countDocuments({ appDid: app.did, recipientDid: creator.did, environment: 'test' })).toBe(1)
  })

  it('20 parallel identical requests update one request: one document, one id', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const results = await Promise.all(
      Array.from({ length: 20 }, () => requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'] })),
    )
    const ids = new Set(results.map((r) => expectOk(r).id))
    expect(ids.size).toBe(1)
    expect(await approvals().countDocuments({ appDid: app.did, recipientDid: creator.did })).toBe(1)
  })

  it('parallel requests with different terms still leave one request, holding one of the sent terms', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const results = await Promise.all(
      [100, 200, 300, 400].map((feeShareBps) => requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'], feeShareBps })),
    )
    expect(new Set(results.map((r) => expectOk(r).id)).size).toBe(1)
    const docs = await approvals().find({ appDid: app.did, recipientDid: creator.did }).lean()
    expect(docs).toHaveLength(1)
    expect([100, 200, 300, 400]).toContain(docs[0]!.feeShareBps)
  })

  it('RecipientNotFound for an unknown recipient, and for a creator who exists only in the other environment', async () => {
    const app = await stack.newApp({ environments: ['test', 'live'] })
    expectError(await requestApproval(stack, app, { recipientDid: 'did:plc:nobodyhere', environment: 'test', paymentTypes: ['tip'] }), 404, 'RecipientNotFound')
    const liveOnly = await stack.newActor({ environment: 'live' })
    expectError(await requestApproval(stack, app, { recipientDid: liveOnly.did, environment: 'test', paymentTypes: ['tip'] }), 404, 'RecipientNotFound')
    expect(await approvals().countDocuments({ appDid: app.did })).toBe(0)
  })

  it('AppUnauthorized for an unregistered app and for an environment the app is not configured in', async () => {
    const creator = await stack.newActor({ environment: 'test' })
    const liveOnlyCreator = await stack.newActor({ environment: 'live' })
    const app = await stack.newApp({ environments: ['test'] })
    expectError(await requestApproval(stack, app, { recipientDid: liveOnlyCreator.did, environment: 'live', paymentTypes: ['tip'] }), 403, 'AppUnauthorized')
    const stranger = await stack.newApp({ environments: [] })
    expectError(await requestApproval(stack, stranger, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'] }), 403, 'AppUnauthorized')
  })

  it.each([
    ['an unknown body field', { extra: true }, 400, 'InvalidRequest'],
    ['an unknown payment type', { paymentTypes: ['tip', 'gift'] }, 400, 'InvalidRequest'],
    ['no payment type', { paymentTypes: [] }, 400, 'InvalidRequest'],
    ['a fee share above the registered 500', { feeShareBps: 501 }, 400, 'InvalidRequest'],
    ['a fee share above 10000', { feeShareBps: 10001 }, 400, 'InvalidRequest'],
    ['an attestation default that does not exist', { publicRecords: { enabled: true, defaults: { attestation: 'loud' } } }, 400, 'InvalidRequest'],
    ['a return URL off the app origin', { setupReturnUrl: 'https://evil.example/steal' }, 400, 'AppUrlNotAllowed'],
    ['a return URL on another scheme of the origin', { setupReturnUrl: 'http://app.example.com/back' }, 400, 'AppUrlNotAllowed'],
    ['a recipient that is not a DID', { recipientDid: 'alice' }, 400, 'InvalidRequest'],
  ])('refuses %s and changes nothing', async (_label, change, status, code) => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const first = expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'], feeShareBps: 100 }))
    const before = await approvals().findOne({ id: first.id }).lean()
    expectError(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'], feeShareBps: 100, ...change }), status, code)
    expect(await approvals().findOne({ id: first.id }).lean()).toEqual(before)
  })

  it('RecipientAppApprovalBlocked once the creator blocked the app, until the creator unblocks it', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const req = { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'] }
    const { id } = expectOk(await requestApproval(stack, app, req))
    const cookie = await stack.dashboardCookie(creator.did, 'test')
    expect((await decide(stack, cookie, id, 'block')).status).toBe(303)
    expectError(await requestApproval(stack, app, req), 403, 'RecipientAppApprovalBlocked')
    expect((await approvals().findOne({ id }).lean())?.status).toBe('blocked')
    expect((await decide(stack, cookie, id, 'unblock')).status).toBe(303)
    expect(expectOk(await requestApproval(stack, app, req)).status).toBe('pending')
  })
})

describe('getRecipientApproval', () => {
  it('is read-only: NotFound before any request, and reading never creates one', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    expectError(await getApproval(stack, app, { recipientDid: creator.did, environment: 'test' }), 404, 'NotFound')
    expect(await approvals().countDocuments({ appDid: app.did })).toBe(0)
  })

  it('pending → not-checked; approved with payout onboarding pending → incomplete; after test onboarding → ready', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const { id } = expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'] }))
    expect(expectOk(await getApproval(stack, app, { recipientDid: creator.did, environment: 'test' }))).toMatchObject({ id, status: 'pending', paymentSetup: 'not-checked' })

    const cookie = await stack.dashboardCookie(creator.did, 'test')
    expect((await decide(stack, cookie, id, 'accept')).status).toBe(303)
    const approved = expectOk(await getApproval(stack, app, { recipientDid: creator.did, environment: 'test' }))
    expect(approved).toMatchObject({ status: 'approved', paymentSetup: 'incomplete', recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'] })
    expect(new Date(approved.approvedAt).getTime()).toBeGreaterThan(Date.now() - 60000)

    // the creator completes payout onboarding on the dashboard (test)
    const home = await dashboardGet(stack, cookie, '/dashboard')
    const onboarded = await dashboardPost(stack, cookie, '/dashboard/payouts/onboard', { csrf: hiddenField(home.text, 'csrf'), next: '/dashboard' })
    expect(onboarded.status).toBe(303)
    expect(expectOk(await getApproval(stack, app, { recipientDid: creator.did, environment: 'test' }))).toMatchObject({ status: 'approved', paymentSetup: 'ready' })
  })

  it('a restricted payout account reads restricted; declined reads not-checked', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test', payoutStatus: 'restricted' })
    const { id } = expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'] }))
    const cookie = await stack.dashboardCookie(creator.did, 'test')
    await decide(stack, cookie, id, 'accept')
    expect(expectOk(await getApproval(stack, app, { recipientDid: creator.did }))).toMatchObject({ status: 'approved', paymentSetup: 'restricted' })
    await decide(stack, cookie, id, 'revoke')
    expect(expectOk(await getApproval(stack, app, { recipientDid: creator.did }))).toMatchObject({ status: 'revoked', paymentSetup: 'not-checked' })
  })

  it('changing the terms puts an approved request back to pending: the creator must approve again', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
    const base = { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'], feeShareBps: 100 }
    const { id } = expectOk(await requestApproval(stack, app, base))
    const cookie = await stack.dashboardCookie(creator.did, 'test')
    await decide(stack, cookie, id, 'accept')
    // the same terms again: still approved
    expect(expectOk(await requestApproval(stack, app, { ...base, requestReason: 'reminder' })).status).toBe('approved')
    expect(expectOk(await getApproval(stack, app, { recipientDid: creator.did }))).toMatchObject({ status: 'approved', paymentSetup: 'ready' })
    // new terms: pending, and not ready
    expect(expectOk(await requestApproval(stack, app, { ...base, feeShareBps: 200 })).status).toBe('pending')
    expect(expectOk(await getApproval(stack, app, { recipientDid: creator.did }))).toMatchObject({ id, status: 'pending', paymentSetup: 'not-checked', feeShareBps: 200 })
  })

  it('keeps apps and environments apart', async () => {
    const app = await stack.newApp({ environments: ['test', 'live'] })
    const other = await stack.newApp({ environments: ['test', 'live'] })
    const creator = await stack.newActor({ environment: 'test' })
    await stack.newActor({ did: creator.did, environment: 'live' })
    expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'] }))
    expectError(await getApproval(stack, app, { recipientDid: creator.did, environment: 'live' }), 404, 'NotFound')
    expectError(await getApproval(stack, other, { recipientDid: creator.did, environment: 'test' }), 404, 'NotFound')
  })
})

describe('the creator decides on the dashboard, and only there', () => {
  it('a service-auth JWT (an identity assertion) never accepts terms: no session, no acceptance', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const { id } = expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'] }))
    const doc = await approvals().findOne({ id }).lean()
    const res = await dashboardPost(stack, null, `/dashboard/approvals/${id}/accept`, { termsHash: doc!.termsHash, from: 'review' }, bearer(await app.jwt('money.svc.app.requestRecipientApproval')))
    expect(res.status).toBe(401)
    expect((await approvals().findOne({ id }).lean())?.status).toBe('pending')
  })

  it('a form without the session CSRF token changes nothing', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const { id } = expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'] }))
    const cookie = await stack.dashboardCookie(creator.did, 'test')
    const doc = await approvals().findOne({ id }).lean()
    const res = await dashboardPost(stack, cookie, `/dashboard/approvals/${id}/accept`, { termsHash: doc!.termsHash, from: 'review', csrf: 'forged' })
    expect(res.status).toBe(403)
    expect((await approvals().findOne({ id }).lean())?.status).toBe('pending')
  })

  it('signing out takes the session CSRF token too: a forged sign-out leaves the session, the page\'s own form ends it', async () => {
    const creator = await stack.newActor({ environment: 'test' })
    const cookie = await stack.dashboardCookie(creator.did, 'test')
    expect((await dashboardPost(stack, cookie, '/dashboard/logout', { csrf: 'forged' })).status).toBe(403)
    expect((await dashboardPost(stack, cookie, '/dashboard/logout', {})).status).toBe(403)
    const home = await dashboardGet(stack, cookie, '/dashboard')
    expect(home.status).toBe(200)
    const out = await dashboardPost(stack, cookie, '/dashboard/logout', { csrf: hiddenField(home.text, 'csrf') })
    expect(out.status).toBe(200)
    expect(out.headers.get('set-cookie')).toMatch(/svc_dashboard=;/)
    expect((await dashboardGet(stack, cookie, '/dashboard')).status).toBe(401)
  })

  it('another creator cannot see or decide on the request', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const intruder = await stack.newActor({ environment: 'test' })
    const { id } = expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'] }))
    const cookie = await stack.dashboardCookie(intruder.did, 'test')
    expect((await dashboardGet(stack, cookie, `/dashboard/approvals/${id}`)).status).toBe(404)
  })

  it('the dashboard shows the fee share a payment takes: an operator who lowered the app\'s share lowered it there too', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const { id } = expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'], feeShareBps: 400 }))
    const cookie = await stack.dashboardCookie(creator.did, 'test')
    expect((await dashboardGet(stack, cookie, `/dashboard/approvals/${id}`)).text).toContain('<dd id="terms-fee-share">4% of each payment</dd>')
    expect((await decide(stack, cookie, id, 'accept')).status).toBe(303)
    // the operator lowers the app's registered share (register-app): payments caps the approval's 4% at 2.5%
    await stack.models.AppEnvironment.updateOne({ appDid: app.did, environment: 'test' }, { $set: { feeShareBps: 250 } })
    const page = await dashboardGet(stack, cookie, `/dashboard/approvals/${id}`)
    expect(page.text).toContain('<dd id="terms-fee-share">2.5% of each payment (the app asked for 4%; the platform has lowered its share since)</dd>')
    expect((await dashboardGet(stack, cookie, '/dashboard')).text).toMatch(new RegExp(`<td>2\\.5%</td><td>[^<]*</td><td><a href="/dashboard/approvals/${id}">`))
    // the app reads the terms the creator accepted (their hash covers them)
    expect(expectOk(await getApproval(stack, app, { recipientDid: creator.did }))).toMatchObject({ status: 'approved', feeShareBps: 400 })
  })

  it('accepting terms that changed meanwhile is refused (ApprovalTermsChanged) and the request stays pending', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const { id } = expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'], feeShareBps: 100 }))
    const cookie = await stack.dashboardCookie(creator.did, 'test')
    const page = await dashboardGet(stack, cookie, `/dashboard/approvals/${id}`)
    expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'], feeShareBps: 400 }))
    const res = await dashboardPost(stack, cookie, `/dashboard/approvals/${id}/accept`, {
      csrf: hiddenField(page.text, 'csrf'),
      termsHash: hiddenField(page.text, 'termsHash'),
      from: 'review',
    })
    expect(res.status).toBe(409)
    expect((await approvals().findOne({ id }).lean())?.status).toBe('pending')
  })

  it('the onboarding page takes the creator through payout setup and acceptance back to the app origin', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const { id, onboardingUrl } = expectOk(
      await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'], setupReturnUrl: 'https://app.example.com/creators/done' }),
    )
    // sign in with a single-use link that leads to the onboarding page
    const login = await stack.dashboardLoginUrl(creator.did, 'test')
    const { page: confirm, signIn, cookie: session } = await signInWithLink(login, new URL(onboardingUrl).pathname)
    expect(confirm.status).toBe(200)
    expect(signIn.status).toBe(303)
    expect(signIn.headers.get('location')).toBe(`/dashboard/onboarding/${id}`)
    const cookie = session!
    expect(signIn.headers.get('set-cookie')).toMatch(/HttpOnly/i)
    expect((await fetch(login, { redirect: 'manual' })).status).toBe(401) // single use

    const page = await dashboardGet(stack, cookie, `/dashboard/onboarding/${id}`)
    expect(page.status).toBe(200)
    expect(page.text).toContain('onboarding-required')
    const onboard = await dashboardPost(stack, cookie, '/dashboard/payouts/onboard', { csrf: hiddenField(page.text, 'csrf'), next: `/dashboard/onboarding/${id}` })
    expect(onboard.headers.get('location')).toBe(`/dashboard/onboarding/${id}`)
    const again = await dashboardGet(stack, cookie, `/dashboard/onboarding/${id}`)
    const accepted = await dashboardPost(stack, cookie, `/dashboard/approvals/${id}/accept`, {
      csrf: hiddenField(again.text, 'csrf'),
      termsHash: hiddenField(again.text, 'termsHash'),
      from: 'onboarding',
    })
    expect(accepted.status).toBe(303)
    expect(accepted.headers.get('location')).toBe(`https://app.example.com/creators/done?svc_approval=approved&approval_id=${id}`)
    expect(expectOk(await getApproval(stack, app, { recipientDid: creator.did }))).toMatchObject({ status: 'approved', paymentSetup: 'ready' })
  })

  it('an approval accepted earlier: the onboarding page (the app sending the creator to finish payout setup) links back to the app', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const { id } = expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'], setupReturnUrl: 'https://app.example.com/creators/done' }))
    const cookie = await stack.dashboardCookie(creator.did, 'test')
    const review = await dashboardGet(stack, cookie, `/dashboard/approvals/${id}`)
    await dashboardPost(stack, cookie, `/dashboard/approvals/${id}/accept`, { csrf: hiddenField(review.text, 'csrf'), termsHash: hiddenField(review.text, 'termsHash'), from: 'review' })
    expect(expectOk(await getApproval(stack, app, { recipientDid: creator.did }))).toMatchObject({ status: 'approved', paymentSetup: 'incomplete' })

    const page = await dashboardGet(stack, cookie, `/dashboard/onboarding/${id}`)
    const onboard = await dashboardPost(stack, cookie, '/dashboard/payouts/onboard', { csrf: hiddenField(page.text, 'csrf'), next: `/dashboard/onboarding/${id}` })
    expect(onboard.headers.get('location')).toBe(`/dashboard/onboarding/${id}`)
    const after = await dashboardGet(stack, cookie, `/dashboard/onboarding/${id}`)
    // before, it said "After you accept you return to …" with nothing to accept and no way back
    expect(after.text).not.toContain('After you accept')
    const link = /<a id="return-to-app" href="([^"]+)"/.exec(after.text)
    expect(link?.[1]?.replaceAll('&amp;', '&')).toBe(`https://app.example.com/creators/done?svc_approval=approved&approval_id=${id}`)
    expect(expectOk(await getApproval(stack, app, { recipientDid: creator.did }))).toMatchObject({ status: 'approved', paymentSetup: 'ready' })
  })

  it('without a setupReturnUrl, or with one the app has since moved away from, onboarding returns to the registered origin', async () => {
    const acceptFromOnboarding = async (app: TestApp, body: Record<string, unknown>, beforeAccept: () => Promise<void> = async () => undefined) => {
      const creator = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
      const { id } = expectOk(await requestApproval(stack, app, { recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'], ...body }))
      const cookie = await stack.dashboardCookie(creator.did, 'test')
      await beforeAccept()
      const page = await dashboardGet(stack, cookie, `/dashboard/onboarding/${id}`)
      const accepted = await dashboardPost(stack, cookie, `/dashboard/approvals/${id}/accept`, { csrf: hiddenField(page.text, 'csrf'), termsHash: hiddenField(page.text, 'termsHash'), from: 'onboarding' })
      return { id, page, location: accepted.headers.get('location') }
    }
    const plain = await acceptFromOnboarding(await stack.newApp(), {})
    expect(plain.page.text).toContain('After you accept you return to https://app.example.com.')
    expect(plain.location).toBe(`https://app.example.com/?svc_approval=approved&approval_id=${plain.id}`)

    const moved = await stack.newApp()
    const stale = await acceptFromOnboarding(moved, { setupReturnUrl: 'https://app.example.com/creators/done' }, async () => {
      // the operator re-registered the app under another origin
      await stack.models.AppEnvironment.updateOne({ appDid: moved.did, environment: 'test' }, { $set: { appUrl: 'https://new.example.com' } })
    })
    expect(stale.location).toBe(`https://new.example.com/?svc_approval=approved&approval_id=${stale.id}`)
  })
})
