/**
 * The methods around payment records, through the whole stack: money.svc.payment.registerCreatorProof and
 * declineRecord (the creator-proof slot of a completed payment) and money.svc.catalog.registerAppLink (an app's
 * private fulfillment link for a catalog record). Shapes are this implementation's own (docs/decisions.md).
 */
import { cidForCbor } from '@atproto/common'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, xrpcPost } from './helpers'
import { approvedCreator, initiate, payByForm, paymentStatus, product } from './payment-helpers'

const PROOF = 'money.svc.payment.registerCreatorProof'
const DECLINE = 'money.svc.payment.declineRecord'
const LINK = 'money.svc.catalog.registerAppLink'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('payment-records')
})
afterAll(async () => {
  await stack.stop()
})

const call = async (app: TestApp, nsid: string, body: Record<string, unknown>) => xrpcPost(stack, nsid, body, bearer(await app.jwt(nsid)))

/** A completed test payment from `app` to a creator who approved it (with public records unless told). */
async function completedPayment(app: TestApp, publicRecords = true): Promise<{ creator: string; paymentUri: string }> {
  const { did } = await approvedCreator(stack, app, { publicRecords })
  const { token, url } = expectOk(await initiate(stack, app, product(did, { environment: 'test' })))
  expect((await payByForm(url, '4242424242424242')).status).toBe(303)
  const { ref } = expectOk(await paymentStatus(stack, app, token))
  return { creator: did, paymentUri: ref.uri }
}

/** The creator's proof record n: its AT-URI in the creator's repository and the CID of its content. */
const proofs = new Map<string, string>()
beforeAll(async () => {
  for (const n of [1, 2]) proofs.set(String(n), (await cidForCbor({ $type: 'money.svc.payment.proof', n })).toString())
})
const proofOf = (creator: string, n = 1) => ({ proofUri: `at://${creator}/money.svc.payment.proof/3kproof${n}`, proofCid: proofs.get(String(n))! })

describe('registerCreatorProof and declineRecord', () => {
  it('registers the proof once; the same proof again answers the same; another proof is NotAllowed', async () => {
    const app = await stack.newApp()
    const { creator, paymentUri } = await completedPayment(app)
    const first = expectOk(await call(app, PROOF, { paymentUri, recipientDid: creator, ...proofOf(creator) }))
    expect(first).toEqual({ paymentUri, ...proofOf(creator), status: 'registered', registeredAt: expect.any(String) })
    const repeats = await Promise.all(Array.from({ length: 8 }, () => call(app, PROOF, { paymentUri, recipientDid: creator, ...proofOf(creator) })))
    for (const r of repeats) expect(expectOk(r)).toEqual(first)
    expectError(await call(app, PROOF, { paymentUri, recipientDid: creator, ...proofOf(creator, 2) }), 403, 'NotAllowed')
    expectError(await call(app, DECLINE, { paymentUri }), 403, 'NotAllowed')
  })

  it('NotAllowed when the creator did not delegate (public records off) or is not the recipient', async () => {
    const app = await stack.newApp()
    const { creator, paymentUri } = await completedPayment(app, false)
    expectError(await call(app, PROOF, { paymentUri, recipientDid: creator, ...proofOf(creator) }), 403, 'NotAllowed')
    const other = await completedPayment(app)
    expectError(await call(app, PROOF, { paymentUri: other.paymentUri, recipientDid: creator, ...proofOf(creator) }), 403, 'NotAllowed')
  })

  it('NotFound for an unknown payment, for another app and for the other environment', async () => {
    const app = await stack.newApp({ environments: ['test', 'live'] })
    const { creator, paymentUri } = await completedPayment(app)
    expectError(await call(app, DECLINE, { environment: 'test', paymentUri: `at://${stack.serviceDid}/money.svc.payment.record/3kzzzzzzzzzzz` }), 404, 'NotFound')
    expectError(await call(app, DECLINE, { environment: 'live', paymentUri }), 404, 'NotFound')
    const other = await stack.newApp()
    expectError(await call(other, PROOF, { paymentUri, recipientDid: creator, ...proofOf(creator) }), 404, 'NotFound')
  })

  it('declines a pending slot once (parallel duplicates answer the same) and then refuses a proof', async () => {
    const app = await stack.newApp()
    const { creator, paymentUri } = await completedPayment(app)
    const results = await Promise.all(Array.from({ length: 8 }, () => call(app, DECLINE, { paymentUri, reason: 'creator opted out' })))
    const bodies = results.map(expectOk)
    expect(new Set(bodies.map((b) => JSON.stringify(b))).size).toBe(1)
    expect(bodies[0]).toEqual({ paymentUri, status: 'declined', declinedAt: expect.any(String) })
    expectError(await call(app, PROOF, { paymentUri, recipientDid: creator, ...proofOf(creator) }), 403, 'NotAllowed')
  })
})

describe('registerAppLink', () => {
  it('one link per app, environment and record: parallel registrations converge, the last write wins', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    const recordUri = `at://${creator.did}/money.svc.catalog.product/3kprod1`
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => call(app, LINK, { recordUri, fulfillmentUrl: `https://app.example.com/fulfil/${i}`, label: 'Sticker pack' })),
    )
    const ids = new Set(results.map((r) => expectOk(r).id))
    expect(ids.size).toBe(1)
    expect([...ids][0]).toMatch(/^alk_/)
    const last = expectOk(await call(app, LINK, { recordUri, fulfillmentUrl: 'https://app.example.com/fulfil/final' }))
    expect(last).toMatchObject({ id: [...ids][0], recordUri, fulfillmentUrl: 'https://app.example.com/fulfil/final', environment: 'test' })
  })

  it('AppUrlNotAllowed off the app origin; NotFound for a record outside the catalog or of an unknown repository', async () => {
    const app = await stack.newApp()
    const creator = await stack.newActor({ environment: 'test' })
    expectError(await call(app, LINK, { recordUri: `at://${creator.did}/money.svc.catalog.product/3k1`, fulfillmentUrl: 'https://evil.example/x' }), 400, 'AppUrlNotAllowed')
    expectError(await call(app, LINK, { recordUri: `at://${creator.did}/app.bsky.feed.post/3k1`, fulfillmentUrl: 'https://app.example.com/x' }), 404, 'NotFound')
    expectError(await call(app, LINK, { recordUri: 'at://did:plc:unknownrepo/money.svc.catalog.product/3k1', fulfillmentUrl: 'https://app.example.com/x' }), 404, 'NotFound')
  })
})
