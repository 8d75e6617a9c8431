/**
 * The SDK against the real service in-process (startStack: adapter → gateway → apps, actors and payments subgraphs →
 * FerretDB, real HTTP, real service-auth verification with jti replay checks): typed calls, contract errors as
 * SvcError with the exact status, code and Svc-Request-Id, and whole payment journeys driven through the SDK as an
 * app backend would (approval request, the creator's accept on the dashboard, checkout, the buyer's card form, the
 * status poller). The dashboard and card-form steps are plain form posts standing in for the browsers.
 */
import { randomBytes } from 'node:crypto'
import { registerApp } from '@svc/apps'
import { generateDidKeyKeypair, type ServiceJwtAlg } from '@svc/service-auth'
import { startStack, type TestStack } from '../../stack'
import {
  buildProduct,
  createSvcClient,
  initiateCheckout,
  isConnectionReady,
  parseProduct,
  pollPaymentStatus,
  InvalidProductError,
  mintAssertion,
  SvcError,
  type CheckoutProduct,
  type SvcClient,
} from '@svc/sdk'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('sdk')
})
afterAll(async () => {
  await stack.stop()
})

async function newClient(opts: { environments?: ('test' | 'live')[]; alg?: ServiceJwtAlg; useKeypair?: boolean } = {}) {
  const alg = opts.alg ?? 'ES256K'
  const kp = await generateDidKeyKeypair(alg)
  for (const environment of opts.environments ?? ['test']) {
    await registerApp({ models: stack.models }, {
      did: kp.did,
      environment,
      appUrl: 'https://app.example.com',
      feeShareBps: 500,
      ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd' },
    })
  }
  // every XRPC request the client sends, by NSID (to prove what was and was not retried)
  const requests: string[] = []
  const countingFetch: typeof fetch = (input, init) => {
    requests.push(new URL(input instanceof Request ? input.url : String(input)).pathname.replace('/xrpc/', ''))
    return fetch(input, init)
  }
  const base = { baseUrl: stack.apiUrl, appDid: kp.did, serviceDid: stack.serviceDid, fetch: countingFetch }
  const client = opts.useKeypair
    ? createSvcClient({ ...base, keypair: kp.keypair })
    : createSvcClient({ ...base, privateKeyHex: kp.privateKeyHex, alg })
  return { did: kp.did, client, requests }
}

async function caught(promise: Promise<unknown>): Promise<SvcError> {
  try {
    await promise
  } catch (err) {
    expect(err).toBeInstanceOf(SvcError)
    return err as SvcError
  }
  throw new Error('expected the call to fail')
}

const REQUEST_ID = /^req_[0-9a-f]{32}$/

describe('typed calls against the real stack', () => {
  it.each<[ServiceJwtAlg, boolean]>([
    ['ES256K', false],
    ['ES256', true],
  ])('getConfig with %s (keypair object: %s) returns the configuration', async (alg, useKeypair) => {
    const { did, client } = await newClient({ alg, useKeypair })
    const config = await client.getConfig({ environment: 'test' })
    expect(config).toEqual({
      appDid: did,
      environment: 'test',
      appUrl: 'https://app.example.com',
      feeShareBps: 500,
      webhook: { configured: false, paused: false, channel: 'webhook' },
      appConfig: {
        modules: { tickets: false },
        ticketing: { qrPasses: false, walletPasses: false },
        ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: false },
      },
    })
  })

  it('updateConfig then getConfig (a fresh JWT per call: the service replay-checks jti)', async () => {
    const { client } = await newClient()
    const updated = await client.updateConfig({ environment: 'test', modules: { tickets: true }, ticketFee: { passToBuyer: true } })
    expect(updated.appConfig.modules.tickets).toBe(true)
    expect(updated.appConfig.ticketFee).toEqual({ bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: true })
    const again = await client.call('money.svc.app.getConfig', { environment: 'test' })
    expect(again.appConfig.modules.tickets).toBe(true)
    expect(again.appConfig.ticketFee.passToBuyer).toBe(true)
    // the same call many times in parallel: every request carries its own jti
    const many = await Promise.all(Array.from({ length: 5 }, () => client.getConfig({ environment: 'test' })))
    expect(many.every((c) => c.appConfig.modules.tickets)).toBe(true)
  })

  it('a contract error is an SvcError with the exact status, code, message and Svc-Request-Id', async () => {
    const { client } = await newClient({ environments: ['test'] })
    const err = await caught(client.getConfig({ environment: 'live' }))
    expect({ status: err.status, error: err.error, nsid: err.nsid, transient: err.transient }).toEqual({
      status: 404,
      error: 'AppEnvironmentNotConfigured',
      nsid: 'money.svc.app.getConfig',
      transient: false,
    })
    expect(err.message).toEqual(expect.any(String))
    expect(err.requestId).toMatch(REQUEST_ID)
  })

  it('updateConfig with a platform-owned field is 400 InvalidRequest', async () => {
    const { client } = await newClient()
    const err = await caught(client.call('money.svc.app.updateConfig', { environment: 'test', ticketFee: { bps: 1 } } as never))
    expect({ status: err.status, error: err.error }).toEqual({ status: 400, error: 'InvalidRequest' })
    expect(err.requestId).toMatch(REQUEST_ID)
  })

  it('an app the service does not know is refused as 401 with a contract code', async () => {
    const kp = await generateDidKeyKeypair('ES256K')
    const other = await generateDidKeyKeypair('ES256K')
    // signed with a key that is not the app DID's key
    const client = createSvcClient({ baseUrl: stack.apiUrl, appDid: kp.did, serviceDid: stack.serviceDid, keypair: other.keypair })
    const err = await caught(client.getConfig({ environment: 'test' }))
    expect(err.status).toBe(401)
    expect(err.error).toEqual(expect.any(String))
    expect(err.requestId).toMatch(REQUEST_ID)
  })

  it('getPayoutStatus for a ready creator is payable; getProfile reads the profile', async () => {
    const { client } = await newClient()
    const actor = await stack.newActor({ environment: 'test', payoutStatus: 'ready', displayName: 'Ada' })
    expect(await client.getPayoutStatus({ actor: actor.did })).toEqual({ actor: actor.did, payable: true, status: 'ready' })
    const profile = await client.getProfile({ actor: actor.did, environment: 'test' })
    expect(profile).toEqual(expect.objectContaining({ did: actor.did, payable: true, displayName: 'Ada' }))
    const missing = await caught(client.getPayoutStatus({}))
    expect({ status: missing.status, error: missing.error }).toEqual({ status: 400, error: 'ActorRequired' })
  })

  it('retired methods are not callable through the client', async () => {
    const { client } = await newClient()
    await expect((client as SvcClient).call('network.svc.payment.lookup' as never, {} as never)).rejects.toThrow(/unknown or retired/)
  })
})

// ---- the browsers' side of a journey (copied in small from xrpc-adapter/test/payment-helpers.ts) ----

interface Page {
  status: number
  text: string
  location: string | null
}

async function page(url: string, init: RequestInit = {}): Promise<Page> {
  const res = await fetch(url, { ...init, redirect: 'manual' })
  return { status: res.status, text: await res.text(), location: res.headers.get('location') }
}

function postForm(url: string, form: Record<string, string>, cookie?: string): Promise<Page> {
  return page(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(form).toString(),
  })
}

/** The value of a named hidden input in a page. */
function hiddenField(html: string, name: string): string {
  const m = new RegExp(`name="${name}" value="([^"]*)"`).exec(html)
  if (!m) throw new Error(`no ${name} field in the page`)
  return m[1]!.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>')
}

/** The creator, signed in to the dashboard, opens the request's page (`dashboardUrl`) and accepts the terms shown. */
async function acceptOnDashboard(creatorDid: string, dashboardUrl: string): Promise<Page> {
  const cookie = await stack.dashboardCookie(creatorDid, 'test')
  const review = await page(dashboardUrl, { headers: { cookie } })
  if (review.status !== 200) throw new Error(`approval page answered ${review.status}`)
  const form = { csrf: hiddenField(review.text, 'csrf'), from: 'review', termsHash: hiddenField(review.text, 'termsHash') }
  return postForm(`${dashboardUrl}/accept`, form, cookie)
}

/** The buyer submits the hosted checkout's card form (no browser). */
function payByForm(url: string, cardNumber: string): Promise<Page> {
  return postForm(`${url}/pay`, { number: cardNumber, expMonth: '12', expYear: String(new Date().getFullYear() + 2), cvc: '123', name: 'Bea Buyer' })
}

/** A product with a fresh app order id. */
function productFor(recipientDid: string, fields: Partial<CheckoutProduct> = {}): string {
  return buildProduct({
    recipientDid,
    paymentType: 'tip',
    amount: 500,
    currency: 'usd',
    appOrderId: `order-${randomBytes(6).toString('hex')}`,
    description: 'Tip for the stream',
    returnUrl: 'https://app.example.com/thanks',
    cancelUrl: 'https://app.example.com/cancel',
    ...fields,
  } as CheckoutProduct)
}

/** A ready creator who accepted this app's request (through the SDK and the dashboard). */
async function approvedCreator(client: SvcClient, opts: { payoutStatus?: 'ready' | 'pending-verification'; publicRecords?: boolean } = {}) {
  const creator = await stack.newActor({ environment: 'test', payoutStatus: opts.payoutStatus ?? 'ready', displayName: 'Ada' })
  const request = await client.requestRecipientApproval({
    recipientDid: creator.did,
    environment: 'test',
    paymentTypes: ['tip', 'shop'],
    ...(opts.publicRecords ? { publicRecords: { enabled: true, defaults: { attestation: 'public' } } } : {}),
  })
  expect((await acceptOnDashboard(creator.did, request.dashboardUrl)).status).toBe(303)
  return creator.did
}

const fastPoll = { initialDelayMs: 20, maxDelayMs: 200, timeoutMs: 20_000 }
const RECORD_URI = /^at:\/\/did:web:svc\.test\/money\.svc\.payment\.record\/[a-z2-7]{13}$/
/** A valid CID (the DAG-CBOR CID of {proof:'sdk-readme'}) standing in for the creator's proof record. */
const PROOF_CID = 'bafyreibixlftqse6wzh6uq2pahkemf6tcjkc74qcc2wa36nxrhrurery5q'

describe('payment journeys through the SDK', () => {
  it('approval request → creator accepts on the dashboard → ready → initiateCheckout → card payment → pollPaymentStatus completed', async () => {
    const { did: appDid, client } = await newClient()
    const creator = await stack.newActor({ environment: 'test', payoutStatus: 'ready', displayName: 'Ada' })

    // 1. the app asks the creator
    const request = await client.requestRecipientApproval({
      recipientDid: creator.did,
      environment: 'test',
      paymentTypes: ['tip', 'shop'],
      requestReason: 'Tips during the stream',
    })
    expect(request).toEqual({
      id: expect.stringMatching(/^apr_/),
      status: 'pending',
      dashboardUrl: `${stack.checkoutUrl}/dashboard/approvals/${request.id}`,
      onboardingUrl: `${stack.checkoutUrl}/dashboard/onboarding/${request.id}`,
      paymentTypes: ['shop', 'tip'], // the service keeps the scope sorted
      feeShareBps: 500,
    })
    // asking again is idempotent: the same request
    expect((await client.requestRecipientApproval({ recipientDid: creator.did, environment: 'test', paymentTypes: ['tip', 'shop'] })).id).toBe(request.id)

    // 2. not ready while pending: approval and payment readiness are separate facts
    const pending = await client.getRecipientApproval({ recipientDid: creator.did, environment: 'test' })
    expect(pending).toMatchObject({ id: request.id, status: 'pending', paymentSetup: 'not-checked', recipientDid: creator.did, environment: 'test' })
    expect(pending.approvedAt).toBeUndefined()
    expect(isConnectionReady(pending)).toBe(false)

    // 3. the creator accepts the current terms on the dashboard
    const accepted = await acceptOnDashboard(creator.did, request.dashboardUrl)
    expect(accepted.status).toBe(303)

    // 4. the app re-reads the connection: approved, and the creator's payout account is ready
    const connection = await client.getRecipientApproval({ recipientDid: creator.did, environment: 'test' })
    expect(connection).toEqual({
      id: request.id,
      status: 'approved',
      paymentSetup: 'ready',
      recipientDid: creator.did,
      environment: 'test',
      paymentTypes: ['shop', 'tip'],
      feeShareBps: 500,
      approvedAt: expect.any(String),
    })
    expect(isConnectionReady(connection)).toBe(true)

    // 5. checkout: build, initiate (persist the token), redirect the buyer to url
    const product = buildProduct({
      recipientDid: creator.did,
      paymentType: 'tip',
      amount: 1234,
      currency: 'usd',
      appOrderId: `order-${randomBytes(6).toString('hex')}`,
      description: 'Tip for the stream',
      returnUrl: 'https://app.example.com/thanks',
      cancelUrl: 'https://app.example.com/cancel',
      environment: 'test',
    })
    const { token, url } = await initiateCheckout(client, product)
    expect(token).toMatch(/^pst_test_[A-Za-z0-9_-]{43}$/)
    expect(url).toMatch(new RegExp(`^${stack.checkoutUrl}/checkout/cko_test_[A-Za-z0-9_-]{43}$`))
    // the retry rule: the same product (same app order id) returns the same attempt
    expect(await initiateCheckout(client, product)).toEqual({ token, url })
    expect(await client.getPaymentStatus({ token })).toEqual({ status: 'pending' })

    // 6. the worker polls while the buyer pays with the test card
    const seen: string[] = []
    let firstRead!: () => void
    const polledOnce = new Promise<void>((resolve) => (firstRead = resolve))
    const polling = pollPaymentStatus(client, token, {
      ...fastPoll,
      onStatus: (s) => {
        seen.push(s.status)
        firstRead()
      },
    })
    await polledOnce
    const paid = await payByForm(url, '4242 4242 4242 4242')
    expect(paid.status).toBe(303)
    expect(paid.location).toBe('https://app.example.com/thanks?svc_checkout=completed')
    const final = await polling
    expect(final).toEqual({ status: 'completed', ref: { uri: expect.stringMatching(RECORD_URI), cid: expect.stringMatching(/^bafyrei/) } })
    expect(seen[0]).toBe('pending')
    const record = await stack.payments.PaymentRecord.findOne({ uri: final.ref!.uri }).lean()
    expect(record).toMatchObject({ appDid, recipientDid: creator.did })
  })

  it('a declined card (4000 0000 0000 0002) makes pollPaymentStatus resolve failed, with no record', async () => {
    const { client } = await newClient()
    const creatorDid = await approvedCreator(client)
    expect(isConnectionReady(await client.getRecipientApproval({ recipientDid: creatorDid, environment: 'test' }))).toBe(true)
    const { token, url } = await initiateCheckout(client, productFor(creatorDid))
    const declined = await payByForm(url, '4000 0000 0000 0002')
    expect(declined.status).toBe(200)
    expect(declined.text).toMatch(/declined/i)
    expect(await pollPaymentStatus(client, token, fastPoll)).toEqual({ status: 'failed', failureReason: 'declined' })
  })

  it('a delegated creator proof, a declined proof slot and a catalog app link, through the typed methods', async () => {
    const { client } = await newClient()
    const creatorDid = await approvedCreator(client, { publicRecords: true })

    // a completed payment to the creator: the app registers the creator's proof record of it
    const toCreator = await initiateCheckout(client, productFor(creatorDid))
    expect((await payByForm(toCreator.url, '4242424242424242')).status).toBe(303)
    const paidCreator = await pollPaymentStatus(client, toCreator.token, fastPoll)
    const proof = { environment: 'test', paymentUri: paidCreator.ref!.uri, recipientDid: creatorDid, proofUri: `at://${creatorDid}/money.svc.payment.proof/3lsdkproof1`, proofCid: PROOF_CID }
    const registered = await client.registerCreatorProof(proof)
    expect(registered).toEqual({ paymentUri: proof.paymentUri, proofUri: proof.proofUri, proofCid: PROOF_CID, status: 'registered', registeredAt: expect.any(String) })
    expect(await client.registerCreatorProof(proof)).toEqual(registered) // repeating the decision gives the same answer

    // a completed self-sale: the app closes its proof slot
    const self = await initiateCheckout(client, productFor(client.appDid, { paymentType: 'shop' }))
    expect((await payByForm(self.url, '4242424242424242')).status).toBe(303)
    const paidSelf = await pollPaymentStatus(client, self.token, fastPoll)
    const declined = await client.declineRecord({ environment: 'test', paymentUri: paidSelf.ref!.uri, reason: 'no proof for shop sales' })
    expect(declined).toEqual({ paymentUri: paidSelf.ref!.uri, status: 'declined', declinedAt: expect.any(String) })
    const refused = await caught(client.registerCreatorProof({ ...proof, paymentUri: paidSelf.ref!.uri, recipientDid: client.appDid }))
    expect({ status: refused.status, error: refused.error }).toEqual({ status: 403, error: 'NotAllowed' })

    // the app's private fulfillment URL for one of the creator's catalog records
    const recordUri = `at://${creatorDid}/money.svc.catalog.product/3lsdkproduct1`
    const link = await client.registerAppLink({ environment: 'test', recordUri, fulfillmentUrl: 'https://app.example.com/fulfil/1', label: 'Poster' })
    expect(link).toEqual({ id: expect.stringMatching(/^alk_/), recordUri, fulfillmentUrl: 'https://app.example.com/fulfil/1', label: 'Poster', environment: 'test', createdAt: expect.any(String) })
    const offOrigin = await caught(client.registerAppLink({ environment: 'test', recordUri, fulfillmentUrl: 'https://elsewhere.example/fulfil/1' }))
    expect({ status: offOrigin.status, error: offOrigin.error }).toEqual({ status: 400, error: 'AppUrlNotAllowed' })
  })
})

describe('contract errors of the payment methods as SvcError', () => {
  it('initiate without an approval (and with a pending one) is 403 AppUnauthorized, thrown at once (one request, not retried)', async () => {
    const { client, requests } = await newClient()
    const creator = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
    const product = productFor(creator.did)
    const err = await caught(initiateCheckout(client, product, { retries: 3, initialDelayMs: 1 }))
    expect({ status: err.status, error: err.error, nsid: err.nsid, transient: err.transient }).toEqual({
      status: 403,
      error: 'AppUnauthorized',
      nsid: 'network.svc.payment.initiate',
      transient: false,
    })
    expect(err.requestId).toMatch(REQUEST_ID)
    expect(requests).toEqual(['network.svc.payment.initiate'])

    await client.requestRecipientApproval({ recipientDid: creator.did, environment: 'test', paymentTypes: ['tip'] })
    const stillPending = await caught(initiateCheckout(client, product, { retries: 3, initialDelayMs: 1 }))
    expect({ status: stillPending.status, error: stillPending.error }).toEqual({ status: 403, error: 'AppUnauthorized' })
    expect(requests.filter((n) => n === 'network.svc.payment.initiate')).toHaveLength(2)
  })

  it('status with a malformed token is 400 InvalidToken; the poller throws it after one request', async () => {
    const { client, requests } = await newClient()
    const direct = await caught(client.getPaymentStatus({ token: 'not-a-token' }))
    expect({ status: direct.status, error: direct.error, transient: direct.transient }).toEqual({ status: 400, error: 'InvalidToken', transient: false })
    expect(direct.requestId).toMatch(REQUEST_ID)
    requests.length = 0
    const polled = await caught(pollPaymentStatus(client, 'not-a-token', fastPoll))
    expect({ status: polled.status, error: polled.error }).toEqual({ status: 400, error: 'InvalidToken' })
    expect(requests).toEqual(['network.svc.payment.status'])

    const missing = await caught(client.getPaymentStatus({}))
    expect({ status: missing.status, error: missing.error }).toEqual({ status: 400, error: 'MissingToken' })
    const unknown = await caught(pollPaymentStatus(client, `pst_test_${'A'.repeat(43)}`, fastPoll))
    expect({ status: unknown.status, error: unknown.error }).toEqual({ status: 404, error: 'NotFound' })
  })

  it("another app's token is 403 AppUnauthorized", async () => {
    const { client } = await newClient()
    const { token } = await initiateCheckout(client, productFor(client.appDid))
    const { client: other } = await newClient()
    const err = await caught(pollPaymentStatus(other, token, fastPoll))
    expect({ status: err.status, error: err.error }).toEqual({ status: 403, error: 'AppUnauthorized' })
  })

  it('approval errors: 404 RecipientNotFound for an unknown DID, 404 NotFound for a creator never asked', async () => {
    const { client } = await newClient()
    const unknown = await caught(client.requestRecipientApproval({ recipientDid: `did:plc:${randomBytes(12).toString('hex')}`, environment: 'test', paymentTypes: ['tip'] }))
    expect({ status: unknown.status, error: unknown.error, nsid: unknown.nsid }).toEqual({ status: 404, error: 'RecipientNotFound', nsid: 'money.svc.app.requestRecipientApproval' })
    const creator = await stack.newActor({ environment: 'test', payoutStatus: 'ready' })
    const never = await caught(client.getRecipientApproval({ recipientDid: creator.did, environment: 'test' }))
    expect({ status: never.status, error: never.error }).toEqual({ status: 404, error: 'NotFound' })
  })

  it('an approved creator whose payout account is not ready: not a ready connection, and initiate is 400 RecipientNotPayable', async () => {
    const { client } = await newClient()
    const creatorDid = await approvedCreator(client, { payoutStatus: 'pending-verification' })
    const connection = await client.getRecipientApproval({ recipientDid: creatorDid, environment: 'test' })
    expect({ status: connection.status, paymentSetup: connection.paymentSetup }).toEqual({ status: 'approved', paymentSetup: 'incomplete' })
    expect(isConnectionReady(connection)).toBe(false)
    const err = await caught(initiateCheckout(client, productFor(creatorDid), { initialDelayMs: 1 }))
    expect({ status: err.status, error: err.error }).toEqual({ status: 400, error: 'RecipientNotPayable' })
  })

  it("an app configured for test and live names the environment in the product (buildProduct's environment field)", async () => {
    const { client } = await newClient({ environments: ['test', 'live'] })
    const without = await caught(initiateCheckout(client, productFor(client.appDid)))
    expect({ status: without.status, error: without.error }).toEqual({ status: 400, error: 'InvalidProduct' })
    const { token } = await initiateCheckout(client, productFor(client.appDid, { environment: 'test' }))
    expect(token).toMatch(/^pst_test_/)
  })
})

describe('buildProduct and isConnectionReady', () => {
  it('buildProduct carries an optional environment and refuses any other value', () => {
    const product = productFor('did:plc:abc', { environment: 'live' })
    const parsed = parseProduct(product)
    expect(parsed.ok && parsed.product.environment).toBe('live')
    const plain = parseProduct(productFor('did:plc:abc'))
    expect(plain.ok && plain.product.environment).toBeUndefined()
    expect(() => productFor('did:plc:abc', { environment: 'staging' as never })).toThrow(InvalidProductError)
  })

  it('isConnectionReady is status approved and paymentSetup ready, nothing else', () => {
    expect(isConnectionReady({ status: 'approved', paymentSetup: 'ready' })).toBe(true)
    for (const [status, paymentSetup] of [
      ['approved', 'incomplete'],
      ['approved', 'restricted'],
      ['approved', 'not-checked'],
      ['pending', 'not-checked'],
      ['pending', 'ready'],
      ['revoked', 'ready'],
      ['blocked', 'not-checked'],
    ]) {
      expect(isConnectionReady({ status: status!, paymentSetup: paymentSetup! })).toBe(false)
    }
    expect(isConnectionReady(null)).toBe(false)
    expect(isConnectionReady(undefined)).toBe(false)
  })
})

describe('tickets through the SDK', () => {
  /** A client of an app with the tickets module on, and a new event with one tier set up by its organizer. */
  async function eventWithTier(tier: { name: string; priceAmount: number; capacity: number }) {
    const { client } = await newClient()
    await client.updateConfig({ environment: 'test', modules: { tickets: true } })
    const organizer = await generateDidKeyKeypair('ES256K')
    const eventUri = `at://${organizer.did}/community.lexicon.calendar.event/${randomBytes(4).toString('hex')}`
    const setup = await client.configureTicketTiers({
      environment: 'test',
      eventUri,
      organizerDid: organizer.did,
      organizerAssertionJwt: await mintAssertion({ keypair: organizer.keypair, did: organizer.did, serviceDid: stack.serviceDid, nsid: 'tickets.svc.configureTicketTiers' }),
      tiers: [{ ...tier, currency: 'eur' }],
    })
    return { client, eventUri, ticketTypeId: setup.tiers[0]!.ticketTypeId }
  }

  it('an organizer sets up a free tier, the app reads availability and a buyer claims, idempotently', async () => {
    const { client, eventUri, ticketTypeId } = await eventWithTier({ name: 'Free entry', priceAmount: 0, capacity: 2 })
    const buyer = await generateDidKeyKeypair('ES256K')
    const claim = {
      environment: 'test',
      eventUri,
      ticketTypeId,
      buyerDid: buyer.did,
      buyerAssertionJwt: await mintAssertion({ keypair: buyer.keypair, did: buyer.did, serviceDid: stack.serviceDid, nsid: 'tickets.svc.claimFreeTicket' }),
      idempotencyKey: 'rsvp-1',
    }
    const first = await client.claimFreeTicket(claim)
    expect(first.ticket.status).toBe('issued')
    expect(await client.claimFreeTicket(claim)).toEqual(first)
    expect(await client.getTicketAvailability({ environment: 'test', eventUri })).toEqual({ eventUri, items: [{ ticketTypeId, available: 1 }] })
    const refused = await client.claimFreeTicket({ ...claim, idempotencyKey: 'rsvp-2', buyerAssertionJwt: await mintAssertion({ keypair: buyer.keypair, did: buyer.did, serviceDid: stack.serviceDid, nsid: 'tickets.svc.claimFreeTicket' }) }).catch((err: unknown) => err)
    expect(refused).toBeInstanceOf(SvcError)
    expect(refused).toMatchObject({ status: 409, error: 'DuplicateClaim' })
  })

  it('the app holds paid tickets and gets the checkout URL; a repeat of the order gets the same hold', async () => {
    const { client, eventUri, ticketTypeId } = await eventWithTier({ name: 'Seat', priceAmount: 1500, capacity: 3 })
    const order = { environment: 'test', eventUri, buyerDid: 'did:plc:buyer0000000000000000000', appOrderId: 'cart-7', items: [{ ticketTypeId, quantity: 2 }] }
    const held = await client.createTicketHold(order)
    expect(held.holdId).toMatch(/^hold_/)
    expect(held.checkout.url.startsWith(`${stack.checkoutUrl}/checkout/`)).toBe(true)
    expect(await client.createTicketHold(order)).toEqual(held)
    expect(await client.getTicketAvailability({ environment: 'test', eventUri })).toEqual({ eventUri, items: [{ ticketTypeId, available: 1 }] })
  })
})
