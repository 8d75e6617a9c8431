/**
 * Creator-proof slots (registerCreatorProof / declinePaymentRecord) and catalog app links, on the test FerretDB:
 * first decision wins (also concurrently), repeats answer the same, other apps' records are NotFound.
 */
import { cidForCbor } from '@atproto/common'
import { declinePaymentRecord, findPaymentRecord, initiateCheckout, payCheckout, registerAppLink, registerCreatorProof } from '../src'
import { authorizationFor, browserTokenOf, expectCode, GOOD_CARD, newDid, openDomain, productOf, type TestDomain, serving } from './helpers'

let t: TestDomain
const APP = 'did:web:proof-app.example.com'
const OTHER_APP = 'did:web:other-proof-app.example.com'

beforeAll(async () => {
  t = await openDomain('payments_proofs_links')
})

afterAll(async () => {
  await t?.close()
})

/** A completed payment of APP to a new creator: its record URI and the creator. */
async function paid(environment: 'test' = 'test') {
  const creator = newDid()
  const started = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator, { environment }) }), { appDid: APP, product: productOf(creator) })
  const view = await payCheckout(t.domain, browserTokenOf(started.url), GOOD_CARD)
  return { uri: view.ref!.uri, creator }
}

let proofSeq = 0
async function proofOf(creator: string) {
  const n = ++proofSeq
  return { proofUri: `at://${creator}/money.svc.payment.proof/3lproof${n}`, proofCid: (await cidForCbor({ proof: n })).toString() }
}

describe('registerCreatorProof', () => {
  test('registers once; the same proof again answers the same; the operator view shows the slot', async () => {
    const { uri, creator } = await paid()
    const proof = await proofOf(creator)
    const input = { environment: 'test', paymentUri: uri, recipientDid: creator, ...proof }
    const first = await registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input })
    expect(first).toEqual({ paymentUri: uri, ...proof, status: 'registered', registeredAt: expect.any(String) })
    t.clock.advance(5000)
    expect(await registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input })).toEqual(first)
    // a retry after the creator revoked the delegation still answers the registration that stands
    expect(await registerCreatorProof(serving(t.domain, { delegated: false }), { appDid: APP, input })).toEqual(first)
    // a new proof needs the delegation
    await expectCode(registerCreatorProof(serving(t.domain, { delegated: false }), { appDid: APP, input: { ...input, ...(await proofOf(creator)) } }), 'NotAllowed', /delegated/)
    const record = await findPaymentRecord(t.domain, uri, 'test')
    expect(record?.proof).toEqual({ status: 'registered', ...proof, at: first.registeredAt })
    expect(record).toMatchObject({ uri, recipient: creator, app: APP, recordType: 'money.svc.payment.record' })
  })

  test('a different proof, or registering a declined slot → NotAllowed', async () => {
    const a = await paid()
    await registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { environment: 'test', paymentUri: a.uri, recipientDid: a.creator, ...(await proofOf(a.creator)) } })
    await expectCode(
      registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { environment: 'test', paymentUri: a.uri, recipientDid: a.creator, ...(await proofOf(a.creator)) } }),
      'NotAllowed',
      /different proof/,
    )
    const b = await paid()
    await declinePaymentRecord(serving(t.domain), { appDid: APP, input: { environment: 'test', paymentUri: b.uri } })
    await expectCode(
      registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { environment: 'test', paymentUri: b.uri, recipientDid: b.creator, ...(await proofOf(b.creator)) } }),
      'NotAllowed',
      /declined/,
    )
  })

  test('not the recipient, or not delegated → NotAllowed; nothing claimed', async () => {
    const { uri, creator } = await paid()
    const proof = await proofOf(creator)
    await expectCode(registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { environment: 'test', paymentUri: uri, recipientDid: newDid(), ...proof } }), 'NotAllowed', /not the recipient/)
    await expectCode(registerCreatorProof(serving(t.domain, { delegated: false }), { appDid: APP, input: { environment: 'test', paymentUri: uri, recipientDid: creator, ...proof } }), 'NotAllowed', /delegated/)
    expect(await t.models.ProofSlot.countDocuments({ _id: uri })).toBe(0)
  })

  test('another app’s record, another environment, or an unknown URI → NotFound', async () => {
    const { uri, creator } = await paid()
    const proof = await proofOf(creator)
    await expectCode(registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: OTHER_APP, input: { environment: 'test', paymentUri: uri, recipientDid: creator, ...proof } }), 'NotFound')
    await expectCode(registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { environment: 'live', paymentUri: uri, recipientDid: creator, ...proof } }), 'NotFound')
    await expectCode(
      registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { environment: 'test', paymentUri: `${uri}x`, recipientDid: creator, ...proof } }),
      'NotFound',
    )
    await expectCode(declinePaymentRecord(serving(t.domain), { appDid: OTHER_APP, input: { environment: 'test', paymentUri: uri } }), 'NotFound')
  })

  test('a malformed proof → InvalidRequest', async () => {
    const { uri, creator } = await paid()
    const proof = await proofOf(creator)
    const base = { environment: 'test', paymentUri: uri, recipientDid: creator }
    await expectCode(registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { ...base, ...proof, proofCid: 'not-a-cid' } }), 'InvalidRequest', /proofCid/)
    await expectCode(registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { ...base, ...proof, proofUri: 'https://x.example/y' } }), 'InvalidRequest', /proofUri/)
    await expectCode(
      registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { ...base, ...proof, proofUri: `at://${newDid()}/money.svc.payment.proof/3labc` } }),
      'InvalidRequest',
      /recipient's repository/,
    )
  })

  test('concurrent registrations of different proofs: one wins, the others are NotAllowed', async () => {
    const { uri, creator } = await paid()
    const proofs = await Promise.all(Array.from({ length: 8 }, () => proofOf(creator)))
    const settled = await Promise.allSettled(
      proofs.map((p) => registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { environment: 'test', paymentUri: uri, recipientDid: creator, ...p } })),
    )
    expect(settled.filter((s) => s.status === 'fulfilled')).toHaveLength(1)
    for (const s of settled.filter((s) => s.status === 'rejected')) expect((s as PromiseRejectedResult).reason.code).toBe('NotAllowed')
  })

  test('eight concurrent first registrations of the same proof all get the same answer, and one slot records it', async () => {
    const { uri, creator } = await paid()
    const proof = await proofOf(creator)
    // a clock that moves on every read: a call answering its own time instead of the stored one would show
    let tick = 0
    const ticking = { ...t.domain, now: () => new Date(t.clock.now.getTime() + tick++) }
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => registerCreatorProof(serving(ticking, { delegated: true }), { appDid: APP, input: { environment: 'test', paymentUri: uri, recipientDid: creator, ...proof } })),
    )
    for (const answer of answers) expect(answer).toEqual(answers[0])
    const slot = (await t.models.ProofSlot.findById(uri).lean())!
    expect(slot).toMatchObject({ status: 'registered' })
    expect(JSON.stringify(answers[0])).toContain(slot.at!.toISOString())
  })

  test('concurrent register and decline: exactly one decision stands', async () => {
    const { uri, creator } = await paid()
    const proof = await proofOf(creator)
    const settled = await Promise.allSettled([
      registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { environment: 'test', paymentUri: uri, recipientDid: creator, ...proof } }),
      declinePaymentRecord(serving(t.domain), { appDid: APP, input: { environment: 'test', paymentUri: uri } }),
      registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { environment: 'test', paymentUri: uri, recipientDid: creator, ...proof } }),
      declinePaymentRecord(serving(t.domain), { appDid: APP, input: { environment: 'test', paymentUri: uri } }),
    ])
    const slot = await t.models.ProofSlot.findById(uri).lean()
    const winners = slot!.status === 'registered' ? [0, 2] : [1, 3]
    for (const [i, s] of settled.entries()) {
      if (winners.includes(i)) expect(s.status).toBe('fulfilled')
      else expect((s as PromiseRejectedResult).reason.code).toBe('NotAllowed')
    }
  })
})

describe('declinePaymentRecord', () => {
  test('declines once; a repeat answers the same; declining a registered slot → NotAllowed', async () => {
    const { uri } = await paid()
    const first = await declinePaymentRecord(serving(t.domain), { appDid: APP, input: { environment: 'test', paymentUri: uri, reason: 'the creator keeps records private' } })
    expect(first).toEqual({ paymentUri: uri, status: 'declined', declinedAt: expect.any(String) })
    t.clock.advance(1000)
    expect(await declinePaymentRecord(serving(t.domain), { appDid: APP, input: { environment: 'test', paymentUri: uri } })).toEqual(first)
    expect((await t.models.ProofSlot.findById(uri).lean())?.reason).toBe('the creator keeps records private')
    expect((await findPaymentRecord(t.domain, uri, 'test'))?.proof.status).toBe('declined')

    const registered = await paid()
    await registerCreatorProof(serving(t.domain, { delegated: true }), { appDid: APP, input: { environment: 'test', paymentUri: registered.uri, recipientDid: registered.creator, ...(await proofOf(registered.creator)) } })
    await expectCode(declinePaymentRecord(serving(t.domain), { appDid: APP, input: { environment: 'test', paymentUri: registered.uri } }), 'NotAllowed', /already registered/)
  })

  test('a reason over 300 characters → InvalidRequest', async () => {
    const { uri } = await paid()
    await expectCode(declinePaymentRecord(serving(t.domain), { appDid: APP, input: { environment: 'test', paymentUri: uri, reason: 'x'.repeat(301) } }), 'InvalidRequest')
  })
})

describe('registerAppLink', () => {
  const ORIGIN = 'https://app.example.com'
  const record = () => `at://${newDid()}/money.svc.catalog.product/3l${Math.random().toString(36).slice(2, 10)}`

  test('creates a link; last write wins (url, label), id and createdAt stay', async () => {
    const recordUri = record()
    const first = await registerAppLink(serving(t.domain, { appUrl: ORIGIN, repoKnown: true }), { appDid: APP, input: { environment: 'test', recordUri, fulfillmentUrl: `${ORIGIN}/fulfill/1`, label: 'Sticker pack' } })
    expect(first).toEqual({ id: expect.stringMatching(/^alk_[0-9a-f]{24}$/), recordUri, fulfillmentUrl: `${ORIGIN}/fulfill/1`, label: 'Sticker pack', environment: 'test', createdAt: expect.any(String) })
    const second = await registerAppLink(serving(t.domain, { appUrl: ORIGIN, repoKnown: true }), { appDid: APP, input: { environment: 'test', recordUri, fulfillmentUrl: `${ORIGIN}/fulfill/2` } })
    expect(second).toEqual({ ...first, fulfillmentUrl: `${ORIGIN}/fulfill/2`, label: null })
    expect(await t.models.AppLink.countDocuments({ recordUri })).toBe(1)
  })

  test('one link per app and environment: another app, or live, has its own', async () => {
    const recordUri = record()
    const a = await registerAppLink(serving(t.domain, { appUrl: ORIGIN, repoKnown: true }), { appDid: APP, input: { environment: 'test', recordUri, fulfillmentUrl: `${ORIGIN}/a` } })
    const b = await registerAppLink(serving(t.domain, { appUrl: ORIGIN, repoKnown: true }), { appDid: OTHER_APP, input: { environment: 'test', recordUri, fulfillmentUrl: `${ORIGIN}/b` } })
    const c = await registerAppLink(serving(t.domain, { appUrl: ORIGIN, repoKnown: true }), { appDid: APP, input: { environment: 'live', recordUri, fulfillmentUrl: `${ORIGIN}/c` } })
    expect(new Set([a.id, b.id, c.id]).size).toBe(3)
  })

  test('20 concurrent first registrations converge on one link', async () => {
    const recordUri = record()
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        registerAppLink(serving(t.domain, { appUrl: ORIGIN, repoKnown: true }), { appDid: APP, input: { environment: 'test', recordUri, fulfillmentUrl: `${ORIGIN}/f/${i}` } }),
      ),
    )
    expect(new Set(results.map((r) => r.id)).size).toBe(1)
    expect(await t.models.AppLink.countDocuments({ appDid: APP, environment: 'test', recordUri })).toBe(1)
    // the last write wins: the stored URL is one of those sent, whole
    const stored = (await t.models.AppLink.findOne({ appDid: APP, environment: 'test', recordUri }).lean())!
    expect(Array.from({ length: 20 }, (_, i) => `${ORIGIN}/f/${i}`)).toContain(stored.fulfillmentUrl)
  })

  test('an unknown record → NotFound; a URL off the app origin → AppUrlNotAllowed; nothing written', async () => {
    const recordUri = record()
    await expectCode(registerAppLink(serving(t.domain, { appUrl: ORIGIN, repoKnown: false }), { appDid: APP, input: { environment: 'test', recordUri, fulfillmentUrl: `${ORIGIN}/x` } }), 'NotFound')
    for (const url of ['https://evil.example.com/x', 'http://app.example.com/x', 'https://app.example.com:8443/x', 'https://user:pw@app.example.com/x', 'javascript:alert(1)', 'not a url']) {
      await expectCode(registerAppLink(serving(t.domain, { appUrl: ORIGIN, repoKnown: true }), { appDid: APP, input: { environment: 'test', recordUri, fulfillmentUrl: url } }), 'AppUrlNotAllowed')
    }
    await expectCode(
      registerAppLink(serving(t.domain, { appUrl: ORIGIN, repoKnown: true }), { appDid: APP, input: { environment: 'test', recordUri, fulfillmentUrl: `${ORIGIN}/x`, label: 'x'.repeat(101) } }),
      'InvalidRequest',
    )
    expect(await t.models.AppLink.countDocuments({ recordUri })).toBe(0)
  })
})
