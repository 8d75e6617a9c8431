/**
 * Hostile input, method by method: every served NSID is called with a valid request in which one field at a time is
 * removed or replaced by a hostile value (another type, a MongoDB operator object, an oversized or control-character
 * string, a malformed identifier), as an app with a bug or an attacker would send it. Every answer must be a success
 * or a contract error: never a 5xx, always `{error, message}` and the request id. The variants are enumerated, not
 * random, so a failure names the exact request. The checkout and dashboard pages and the developer routes get the
 * same values in their paths, queries and forms: never a 5xx either.
 */
import { randomBytes } from 'node:crypto'
import { cidForCbor } from '@atproto/common'
import { PRODUCT_PREFIX } from '@svc/checkout-product'
import { DASHBOARD_COOKIE } from '@svc/dashboard-session'
import { generateDidKeyKeypair, type DidKeyKeypair } from '@svc/service-auth'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { CLAIM, enableTickets, eventUriOf, HOLD, newSigner, setUpEvent, type Signer } from '../tickets/helpers'
import { bearer, claims, craftJwt, expectOk, httpRequest, registerKeypairApp, xrpcGet, xrpcPost, type HttpResult } from './helpers'
import { ALL_PERMISSIONS, checkoutUrl } from './events-helpers'
import { approvedCreator, initiate, payByForm, paymentStatus, product } from './payment-helpers'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
type JsonObject = { [key: string]: Json }
type Path = (string | number)[]

/** What replaces a field of a JSON body. */
const HOSTILE: Json[] = [
  null,
  true,
  0,
  -1,
  1.5,
  2 ** 53 + 2,
  1e308,
  '',
  ' ',
  'x'.repeat(10_000),
  'a\u0000b',
  '\ud800',
  '💥🎟️',
  'did:plc:',
  'did:web:..%2F..',
  'at://',
  'at://did:plc:aaaaaaaaaaaaaaaaaaaaaaaa/../../x',
  'https://',
  'javascript:alert(1)',
  '9999-99-99T99:99:99Z',
  '$where',
  [],
  [null],
  {},
  { $gt: '' },
  { $ne: null },
]

/** What replaces a query parameter (a parameter is always text; `[a, b]` gives it twice). */
const HOSTILE_PARAMS: (string | string[])[] = [
  '',
  ' ',
  'x'.repeat(4000),
  'a\u0000b',
  '\ud800',
  'did:plc:',
  'at://',
  '{"$gt":""}',
  'null',
  'true',
  '-1',
  '1e308',
  '__proto__',
  ['test', 'live'],
  ['a', 'b'],
]

/** Every path into `value` (object keys and array indexes), the root left out. */
function pathsOf(value: Json, prefix: Path = []): Path[] {
  if (value === null || typeof value !== 'object') return []
  const entries: [string | number, Json][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value)
  return entries.flatMap(([key, child]) => [[...prefix, key], ...pathsOf(child, [...prefix, key])])
}

const REMOVE = Symbol('remove')

/** A copy of `value` with the field at `path` replaced (or removed). */
function withField(value: Json, path: Path, replacement: Json | typeof REMOVE): Json {
  const copy = structuredClone(value) as Json
  let parent = copy as Record<string | number, Json>
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, Json>
  const last = path[path.length - 1]!
  if (replacement !== REMOVE) parent[last] = replacement
  else if (Array.isArray(parent)) parent.splice(last as number, 1)
  else delete parent[last]
  return copy
}

const describeValue = (v: Json | typeof REMOVE | string[]): string => {
  if (v === REMOVE) return 'removed'
  const text = JSON.stringify(v)
  return text.length > 40 ? `${text.slice(0, 37)}…` : text
}

interface Variant {
  name: string
  send(): Promise<HttpResult>
  /** the unchanged request: it must succeed, or the variants would only meet the error of a broken baseline */
  valid?: true
  /** a body the contract refuses whole: 400 InvalidRequest */
  refused?: true
  /** what the refusal's message must say */
  message?: RegExp
}

/** The variants of a procedure: its valid body (made fresh for each call) with one field changed, and bodies of another shape. */
function bodyVariants(stack: TestStack, app: TestApp, nsid: string, valid: () => Promise<JsonObject>, paths: Path[]): Variant[] {
  const post = async (mutate: (body: JsonObject) => Json, raw?: (body: JsonObject) => string) => {
    const body = await valid()
    const headers = bearer(await app.jwt(nsid))
    return raw ? xrpcPost(stack, nsid, undefined, headers, { body: raw(body), contentType: 'application/json' }) : xrpcPost(stack, nsid, mutate(body), headers)
  }
  const variants: Variant[] = [
    { name: 'the valid body', send: () => post((b) => b), valid: true },
    { name: 'an unknown field', send: () => post((b) => ({ ...b, unexpected: { $gt: '' } })), refused: true },
    // keys every object inherits: a lookup in the lexicon's shape must not find Object.prototype's
    ...(['toString', 'constructor', 'hasOwnProperty', 'valueOf'] as const).map((key) => ({ name: `a ${key} key`, send: () => post((b) => ({ ...b, [key]: 1 })), refused: true as const })),
    // a recursive walk of it would overflow the stack (the answer quoted "Maximum call stack size exceeded")
    { name: 'an unknown field nested 10,000 deep', send: () => post((b) => b, (b) => JSON.stringify(b).replace(/^\{/, `{"unexpected":${'['.repeat(10_000)}${']'.repeat(10_000)},`)), refused: true, message: /^Input nests deeper than 32 levels$/ },
    // refused by Fastify's parser (prototype poisoning), whose own message said the JSON was not valid
    { name: 'a __proto__ key', send: () => post((b) => b, (b) => JSON.stringify(b).replace(/^\{/, '{"__proto__":{"isAdmin":true},')), refused: true, message: /holds a `__proto__` key or a `constructor` key holding `prototype`, which is refused$/ },
    ...[[], 'body', 1, null].map((other) => ({ name: `the body ${JSON.stringify(other)}`, send: () => post(() => other as Json) })),
  ]
  for (const path of paths) {
    for (const replacement of [REMOVE, ...HOSTILE] as const) {
      variants.push({ name: `${path.join('.')} ${describeValue(replacement)}`, send: () => post((b) => withField(b, path, replacement)) })
    }
  }
  return variants
}

/** The variants of a query: its valid parameters with one changed, given twice, or removed. */
function paramVariants(stack: TestStack, app: TestApp, nsid: string, valid: () => Promise<Record<string, string>>): Variant[] {
  const get = async (mutate: (params: Record<string, string | string[]>) => Record<string, string | string[]>) =>
    xrpcGet(stack, nsid, mutate(await valid()), bearer(await app.jwt(nsid)))
  const variants: Variant[] = [
    { name: 'the valid parameters', send: () => get((p) => p), valid: true },
    { name: 'an unknown parameter', send: () => get((p) => ({ ...p, unexpected: '1' })) },
  ]
  return variants.concat(
    (Object.keys(paramsShape[nsid] ?? {}) as string[]).flatMap((key) =>
      [undefined, ...HOSTILE_PARAMS].map((replacement) => ({
        name: `${key} ${replacement === undefined ? 'removed' : describeValue(replacement)}`,
        send: () =>
          get((p) => {
            const { [key]: _, ...rest } = p
            return replacement === undefined ? rest : { ...rest, [key]: replacement }
          }),
      })),
    ),
  )
}

/** The parameters each query is given (filled by the setup). */
const paramsShape: Record<string, Record<string, string>> = {}

/** Sends every variant, a few at a time; answers what is not a contract answer. */
async function offenders(nsid: string, variants: Variant[]): Promise<string[]> {
  const found: string[] = []
  const queue = [...variants]
  const worker = async () => {
    for (let v = queue.shift(); v; v = queue.shift()) {
      const res = await v.send()
      const contractError = typeof res.body?.error === 'string' && res.body.error !== '' && typeof res.body?.message === 'string'
      const ok = res.status >= 200 && res.status < 500 && (res.status < 400 || contractError) && /^req_[0-9a-f]{32}$/.test(res.requestId ?? '')
      if (!ok || (v.valid && res.status !== 200) || (v.refused && (res.status !== 400 || res.body?.error !== 'InvalidRequest')) || (v.message && !v.message.test(String(res.body?.message)))) found.push(`${nsid} with ${v.name}: ${res.status} ${res.text.slice(0, 200)}`)
    }
  }
  await Promise.all(Array.from({ length: 6 }, worker))
  return found
}

let stack: TestStack
let app: TestApp
let creator: string
let approvalId: string
let creatorCookie: string
let checkoutPage: string
let organizer: Signer
let eventUri: string
let freeTier: string
let paidTier: string
let statusToken: string
let paymentUri: string
let declinablePaymentUri: string
let proofCid: string

beforeAll(async () => {
  stack = await startStack('hostile-input')
  app = await stack.newApp()
  await enableTickets(stack, app)
  ;({ did: creator, approvalId, cookie: creatorCookie } = await approvedCreator(stack, app, { publicRecords: true }))
  const { token, url } = expectOk(await initiate(stack, app, product(creator, { environment: 'test' })))
  checkoutPage = expectOk(await initiate(stack, app, product(creator, { environment: 'test' }))).url
  statusToken = token
  expect((await payByForm(url, '4242424242424242')).status).toBe(303)
  paymentUri = expectOk(await paymentStatus(stack, app, token)).ref.uri
  const second = expectOk(await initiate(stack, app, product(creator, { environment: 'test' })))
  expect((await payByForm(second.url, '4242424242424242')).status).toBe(303)
  declinablePaymentUri = expectOk(await paymentStatus(stack, app, second.token)).ref.uri
  proofCid = (await cidForCbor({ $type: 'money.svc.payment.proof', n: 1 })).toString()
  organizer = await newSigner(stack)
  const event = await setUpEvent(stack, app, organizer, [
    { name: 'Free', priceAmount: 0, currency: 'usd', capacity: 100_000, perBuyerLimit: 1 },
    { name: 'General', priceAmount: 2500, currency: 'usd', capacity: 100_000, perBuyerLimit: 4 },
  ])
  eventUri = event.eventUri
  freeTier = event.tiers[0]!.ticketTypeId
  paidTier = event.tiers[1]!.ticketTypeId
  Object.assign(paramsShape, {
    'money.svc.app.getConfig': { environment: 'test' },
    'money.svc.actor.getPayoutStatus': { actor: creator, environment: 'test' },
    'money.svc.actor.getProfile': { actor: creator, environment: 'test' },
    'money.svc.app.getRecipientApproval': { recipientDid: creator, environment: 'test' },
    'network.svc.payment.status': { token: statusToken },
    'tickets.svc.getTicketAvailability': { eventUri, environment: 'test' },
  })
}, 120_000)
afterAll(async () => {
  await stack.stop()
})

const fresh = () => randomBytes(8).toString('hex')

describe('every served query answers hostile parameters with a contract error, never a 5xx', () => {
  it.each([
    'money.svc.app.getConfig',
    'money.svc.actor.getPayoutStatus',
    'money.svc.actor.getProfile',
    'money.svc.app.getRecipientApproval',
    'network.svc.payment.status',
    'tickets.svc.getTicketAvailability',
  ])('%s', async (nsid) => {
    expect(await offenders(nsid, paramVariants(stack, app, nsid, async () => paramsShape[nsid]!))).toEqual([])
  })
})

describe('every served procedure answers hostile bodies with a contract error, never a 5xx', () => {
  const procedures: [string, () => Promise<JsonObject>][] = [
    ['money.svc.app.updateConfig', async () => ({ environment: 'test', webhookUrl: 'https://app.example.com/hooks', modules: { tickets: true }, ticketing: { qrPasses: true } })],
    [
      'money.svc.app.requestRecipientApproval',
      async () => ({
        recipientDid: (await stack.newActor({ environment: 'test', payoutStatus: 'ready', displayName: 'Fuzz' })).did,
        environment: 'test',
        paymentTypes: ['tip', 'shop'],
        feeShareBps: 100,
        publicRecords: { enabled: true, defaults: { attestation: 'public' } },
        requestReason: 'tips for streams',
        setupReturnUrl: 'https://app.example.com/setup',
      }),
    ],
    ['network.svc.payment.initiate', async () => ({ product: product(creator, { environment: 'test' }) })],
    ['money.svc.payment.registerCreatorProof', async () => ({ environment: 'test', paymentUri, recipientDid: creator, proofUri: `at://${creator}/money.svc.payment.proof/3kproof1`, proofCid })],
    ['money.svc.payment.declineRecord', async () => ({ environment: 'test', paymentUri: declinablePaymentUri, reason: 'opted out' })],
    ['money.svc.catalog.registerAppLink', async () => ({ environment: 'test', recordUri: `at://${creator}/money.svc.catalog.product/${fresh()}`, fulfillmentUrl: 'https://app.example.com/fulfil', label: 'Download' })],
    [
      'tickets.svc.configureTicketTiers',
      async () => ({
        environment: 'test',
        eventUri: eventUriOf(organizer),
        organizerDid: organizer.did,
        organizerAssertionJwt: await organizer.assertion('tickets.svc.configureTicketTiers'),
        tiers: [{ name: 'General', priceAmount: 2500, currency: 'usd', capacity: 10, perBuyerLimit: 2, salesStartAt: '2026-01-01T00:00:00Z', salesEndAt: '2099-01-01T00:00:00Z' }],
        holdDurationSeconds: 600,
      }),
    ],
    [
      HOLD,
      async () => {
        const buyer = await newSigner(stack)
        return {
          environment: 'test',
          eventUri,
          buyerDid: buyer.did,
          buyerAssertionJwt: await buyer.assertion(HOLD),
          appOrderId: fresh(),
          returnUrl: 'https://app.example.com/thanks',
          cancelUrl: 'https://app.example.com/cancel',
          items: [{ ticketTypeId: paidTier, quantity: 1 }],
        }
      },
    ],
    [
      CLAIM,
      async () => {
        const buyer = await newSigner(stack)
        return { environment: 'test', eventUri, ticketTypeId: freeTier, buyerDid: buyer.did, buyerAssertionJwt: await buyer.assertion(CLAIM), idempotencyKey: fresh() }
      },
    ],
  ]

  it.each(procedures)('%s', async (nsid, valid) => {
    const paths = pathsOf(await valid())
    expect(await offenders(nsid, bodyVariants(stack, app, nsid, valid, paths))).toEqual([])
  }, 180_000)

  it('network.svc.payment.initiate with hostile fields inside its product', async () => {
    const fields = (): JsonObject => JSON.parse(Buffer.from(product(creator, { environment: 'test' }).slice(PRODUCT_PREFIX.length), 'base64url').toString('utf8'))
    const encode = (p: Json) => PRODUCT_PREFIX + Buffer.from(JSON.stringify(p), 'utf8').toString('base64url')
    const paths = pathsOf(fields())
    const variants = bodyVariants(stack, app, 'network.svc.payment.initiate', async () => ({ product: encode(fields()) }), []).slice(0, 1)
    for (const path of paths) {
      for (const replacement of [REMOVE, ...HOSTILE] as const) {
        variants.push({
          name: `product.${path.join('.')} ${describeValue(replacement)}`,
          send: async () => xrpcPost(stack, 'network.svc.payment.initiate', { product: encode(withField(fields(), path, replacement)) }, bearer(await app.jwt('network.svc.payment.initiate'))),
        })
      }
    }
    for (const raw of [PRODUCT_PREFIX, `${PRODUCT_PREFIX}!!!`, `${PRODUCT_PREFIX}${Buffer.from('not json').toString('base64url')}`, `${PRODUCT_PREFIX}${Buffer.from('[1,2]').toString('base64url')}`, encode('text'), encode(null)]) {
      variants.push({ name: `product ${describeValue(raw)}`, send: async () => xrpcPost(stack, 'network.svc.payment.initiate', { product: raw }, bearer(await app.jwt('network.svc.payment.initiate'))) })
    }
    expect(await offenders('network.svc.payment.initiate', variants)).toEqual([])
  }, 180_000)
})

describe('the pages and developer routes answer hostile paths, queries and forms without a 5xx', () => {
  /** `%…` values go into a URL as they are (a stray or invalid percent-encoding), the others encoded */
  const VALUES = ['a\u0000b', '%ff', '%', 'x'.repeat(5000), '', '{"$gt":""}', '__proto__', 'at://', 'did:plc:']
  const inUrl = (v: string) => (v.startsWith('%') ? v : encodeURIComponent(v))
  const form = (fields: Record<string, string>, headers: Record<string, string> = {}): RequestInit => ({
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  })

  it('checkout, dashboard and developer routes', async () => {
    const organizerCookie = await stack.dashboardCookie(organizer.did, 'test')
    const key = await app.apiKey('test', ALL_PERMISSIONS)
    const asKey = { authorization: `Bearer ${key}` }
    const base = stack.checkoutUrl
    const variants: Variant[] = VALUES.flatMap((value): Variant[] => {
      const v = inUrl(value)
      const named = (name: string, send: () => Promise<HttpResult>): Variant => ({ name: `${name} ${describeValue(value)}`, send })
      const card = { number: '4000000000000002', expMonth: '12', expYear: '2030', cvc: '123', name: 'Bea Buyer' }
      return [
        named('checkout token', () => httpRequest(`${base}/checkout/${v}`)),
        named('checkout pay token', () => httpRequest(`${base}/checkout/${v}/pay`, form(card))),
        named('checkout cancel token', () => httpRequest(`${base}/checkout/${v}/cancel`, form({}))),
        ...Object.keys(card).map((field) => named(`pay form ${field}`, () => httpRequest(`${checkoutPage}/pay`, form({ ...card, [field]: value })))),
        named('dashboard login token', () => httpRequest(`${base}/dashboard/login/${v}?next=${v}`, { redirect: 'manual' })),
        named('dashboard session', () => httpRequest(`${base}/dashboard`, { headers: { cookie: `${DASHBOARD_COOKIE}=${v}` } })),
        named('approval page id', () => httpRequest(`${base}/dashboard/approvals/${v}`, { headers: { cookie: creatorCookie } })),
        named('onboarding page id', () => httpRequest(`${base}/dashboard/onboarding/${v}`, { headers: { cookie: creatorCookie } })),
        named('approval action id', () => httpRequest(`${base}/dashboard/approvals/${v}/accept`, form({ csrf: value, termsHash: value }, { cookie: creatorCookie }))),
        named('approval action', () => httpRequest(`${base}/dashboard/approvals/${approvalId}/${v}`, form({ csrf: value }, { cookie: creatorCookie }))),
        named('event page uri', () => httpRequest(`${base}/dashboard/events/view?uri=${v}`, { headers: { cookie: organizerCookie } })),
        named('attendees uri', () => httpRequest(`${base}/dashboard/events/attendees.csv?uri=${v}`, { headers: { cookie: organizerCookie } })),
        named('void ticket id', () => httpRequest(`${base}/dashboard/tickets/${v}/void`, form({ csrf: value, uri: eventUri }, { cookie: organizerCookie }))),
        named('developer config', () => httpRequest(checkoutUrl(stack, '/api/app/developer/config', { app: value, environment: value }), { headers: asKey })),
        named('developer key', () => httpRequest(checkoutUrl(stack, '/api/app/developer/config', { app: app.did, environment: 'test' }), { headers: { authorization: `Bearer ${v}` } })),
        named('deliveries query', () => httpRequest(checkoutUrl(stack, '/api/webhooks/atm', { app: value, environment: value, status: value, limit: value }), { headers: asKey })),
        ...['deliveryId', 'status', 'since'].map((field) =>
          named(`redrive ${field}`, () =>
            httpRequest(checkoutUrl(stack, '/api/webhooks/atm', { app: app.did, environment: 'test' }), { method: 'POST', headers: { ...asKey, 'content-type': 'application/json' }, body: JSON.stringify({ [field]: value }) }),
          ),
        ),
        named('test event type', () => httpRequest(checkoutUrl(stack, '/api/app/developer/test-event', { app: app.did, environment: 'test', type: value }), { method: 'POST', headers: asKey })),
      ]
    })
    const found: string[] = []
    for (const v of variants) {
      const res = await v.send()
      if (res.status >= 500) found.push(`${v.name}: ${res.status} ${res.text.slice(0, 200)}`)
    }
    expect(found).toEqual([])
  }, 120_000)
})

describe('service-auth and assertion JWTs with hostile claims and headers answer 401 or 400, never a 5xx', () => {
  const CLAIMS = ['iss', 'aud', 'lxm', 'iat', 'exp', 'jti', 'nbf']
  const HEADERS = ['alg', 'typ', 'kid']

  /**
   * A JWT signed by `signer` (made anew for each call by `send`) with one claim or header field removed or hostile.
   * `send(jwtOf)` makes the call, its JWT from `jwtOf(signer)`.
   */
  function jwtVariants(lxm: string, send: (jwtOf: (signer: DidKeyKeypair) => Promise<string>) => Promise<HttpResult>): Variant[] {
    const jwt = (edit: (header: Json, payload: Json) => [Json, Json]) => (signer: DidKeyKeypair) => {
      const [header, payload] = edit({ typ: 'JWT', alg: signer.keypair.jwtAlg }, claims(stack, signer.did, lxm) as JsonObject)
      return craftJwt(signer.keypair, header as JsonObject, payload as JsonObject)
    }
    const variants: Variant[] = [{ name: 'the valid JWT', send: () => send(jwt((h, p) => [h, p])), valid: true }]
    for (const replacement of [REMOVE, ...HOSTILE] as const) {
      for (const claim of CLAIMS) variants.push({ name: `claim ${claim} ${describeValue(replacement)}`, send: () => send(jwt((h, p) => [h, withField(p, [claim], replacement)])) })
      for (const field of HEADERS) variants.push({ name: `header ${field} ${describeValue(replacement)}`, send: () => send(jwt((h, p) => [withField(h, [field], replacement), p])) })
    }
    return variants
  }

  it('the app JWT of money.svc.app.getConfig', async () => {
    const keyed = await registerKeypairApp(stack)
    const nsid = 'money.svc.app.getConfig'
    const variants = jwtVariants(nsid, async (jwtOf) => xrpcGet(stack, nsid, { environment: 'test' }, bearer(await jwtOf(keyed))))
    expect(await offenders(nsid, variants)).toEqual([])
  }, 120_000)

  it('the buyer assertion of tickets.svc.claimFreeTicket', async () => {
    // a new buyer for every call, so that claims that succeed do not meet the per-buyer limit of the next
    const variants = jwtVariants(CLAIM, async (jwtOf) => {
      const buyer = await generateDidKeyKeypair('ES256K')
      const body = { environment: 'test', eventUri, ticketTypeId: freeTier, buyerDid: buyer.did, buyerAssertionJwt: await jwtOf(buyer), idempotencyKey: fresh() }
      return xrpcPost(stack, CLAIM, body, bearer(await app.jwt(CLAIM)))
    })
    expect(await offenders(CLAIM, variants)).toEqual([])
  }, 120_000)
})
