/**
 * The per-address limit on issuers looked up: forged tokens naming made-up did:plc issuers each make the service ask
 * the PLC directory, until the address has named more issuers than the limit in the window, also when they come all
 * at once; its calls are then refused 429 before auth, asking nothing. One issuer is counted once, so an app whose
 * own issuer cannot be resolved (the directory away) is not refused for it. Tokens that need no lookup are not counted,
 * except a did:key issuer no app is registered for, counted once the gateway said so.
 * An issuer the directory does not know is not asked for again for a minute. A buyer's assertion naming a made-up
 * issuer is counted as the app's token is. A directory failing for now answers 503 (worth a retry), for an app's token
 * and a buyer's assertion alike; one that does not know the DID 401 (400 BuyerAssertionInvalid for an assertion).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomInt } from 'node:crypto'
import { generateDidKeyKeypair, mintServiceJwt } from '@svc/service-auth'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, GET_CONFIG, getConfig, xrpcGet, xrpcPost } from './helpers'
import { AVAILABILITY, CLAIM } from '../tickets/helpers'

const MAX = 3

let stack: TestStack
let app: TestApp
let plc: Server
/** the DIDs the PLC directory was asked for */
const asked: string[] = []
/** whether the PLC directory fails for now (503) */
let directoryDown = false

beforeAll(async () => {
  plc = createServer((req, res) => {
    asked.push(decodeURIComponent((req.url ?? '').slice(1)))
    // slow enough that calls sent at once are all in flight before the first is refused
    setTimeout(() => (directoryDown ? res.writeHead(503).end('down') : res.writeHead(404).end()), 100)
  })
  await new Promise<void>((resolve) => plc.listen(0, '127.0.0.1', resolve))
  stack = await startStack('issuer-lookups', { plcUrl: plcUrlOf(plc), limits: { issuerLookupsPerAddress: { max: MAX, windowMs: 60_000 } } })
  app = await stack.newApp()
})
afterAll(async () => {
  await stack?.stop()
  await new Promise((resolve) => plc?.close(resolve))
})

const plcUrlOf = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`
const madeUpPlcDid = () => `did:plc:${Array.from({ length: 24 }, () => 'abcdefghijklmnopqrstuvwxyz234567'[randomInt(32)]).join('')}`

async function forged(iss = madeUpPlcDid(), aud = stack.serviceDid): Promise<Record<string, string>> {
  const { keypair } = await generateDidKeyKeypair('ES256K')
  return bearer(await mintServiceJwt({ keypair, iss, aud, lxm: GET_CONFIG }))
}
const call = (headers: Record<string, string>) => xrpcGet(stack, GET_CONFIG, { environment: 'test' }, headers)

it('does not count tokens that need no lookup, nor one issuer more than once', async () => {
  for (let i = 0; i < MAX + 2; i++) {
    expectError(await call({ authorization: 'Bearer not-a-jwt' }), 401, 'BadJwt')
    expectOk(await getConfig(stack, app, 'test')) // a did:key issuer: nothing to look up
  }
  expect(asked).toEqual([])
  // an issuer the directory does not know, named again and again: asked for once (before, every call asked), and
  // counted once
  const unresolvable = madeUpPlcDid()
  for (let i = 0; i < MAX + 2; i++) expectError(await call(await forged(unresolvable)), 401, 'UnresolvableIssuer')
  expect(asked).toEqual([unresolvable])
  expectOk(await getConfig(stack, app, 'test'))
})

it('refuses an address past the limit before the lookup, also for calls sent at once: 429 with Retry-After, no more lookups', async () => {
  asked.length = 0
  // the first test's issuer counted one of the window's
  const tokens = await Promise.all(Array.from({ length: 20 }, () => forged()))
  const answers = await Promise.all(tokens.map(call))
  expect(answers.filter((r) => r.status === 401).map((r) => r.body.error)).toEqual(Array(MAX - 1).fill('UnresolvableIssuer'))
  expect(answers.filter((r) => r.status === 429)).toHaveLength(20 - (MAX - 1))
  expect(asked).toHaveLength(MAX - 1)

  const refused = await call(await forged())
  expectError(refused, 429, 'RateLimitExceeded', /too many unknown service-auth issuers from this address: at most 3 per 60 s/)
  const retryAfter = Number(refused.headers.get('retry-after'))
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(retryAfter).toBeLessThanOrEqual(60)
  expect(asked).toHaveLength(MAX - 1)
  // the limit is the address's: a valid app calling from it waits for the window too
  expectError(await getConfig(stack, app, 'test'), 429, 'RateLimitExceeded')
})

describe('in a short window', () => {
  const WINDOW_MS = 3_000
  let short: TestStack
  beforeAll(async () => {
    short = await startStack('issuer-lookups-window', { plcUrl: plcUrlOf(plc), limits: { issuerLookupsPerAddress: { max: MAX, windowMs: WINDOW_MS } } })
  })
  afterAll(async () => {
    await short?.stop()
  })
  const forgedFor = async (iss: string) => {
    const { keypair } = await generateDidKeyKeypair('ES256K')
    return bearer(await mintServiceJwt({ keypair, iss, aud: short.serviceDid, lxm: GET_CONFIG }))
  }
  const callShort = async (iss: string) => xrpcGet(short, GET_CONFIG, { environment: 'test' }, await forgedFor(iss))

  it('an issuer refused is not remembered: named again in the next window, it is counted as new', async () => {
    asked.length = 0
    expectError(await callShort(madeUpPlcDid()), 401, 'UnresolvableIssuer') // opens the window, before this answer
    const start = Date.now()
    await new Promise((r) => setTimeout(r, WINDOW_MS / 2))
    // late in the window, many issuers at once: the window's rest of the limit looked up, the others refused
    const issuers = Array.from({ length: 12 }, () => madeUpPlcDid())
    const answers = await Promise.all(issuers.map(callShort))
    const refused = issuers.filter((_, i) => answers[i]!.status === 429)
    expect(refused.length).toBeGreaterThanOrEqual(12 - (MAX - 1))
    // the next window (and the process's refusal over, which ends on a whole second): the refused issuers again,
    // at once, are counted as new ones: the window's MAX looked up, the others refused
    expect(refused.length).toBeGreaterThan(MAX)
    await new Promise((r) => setTimeout(r, Math.max(0, start + WINDOW_MS + 1000 - Date.now())))
    asked.length = 0
    const again = await Promise.all(refused.map(callShort))
    expect(asked).toHaveLength(MAX)
    expect(again.filter((r) => r.status === 429)).toHaveLength(refused.length - MAX)
  })
})

describe("buyers' assertions", () => {
  let tickets: TestStack
  let ticketsApp: TestApp
  beforeAll(async () => {
    tickets = await startStack('issuer-lookups-assertions', { plcUrl: plcUrlOf(plc), limits: { issuerLookupsPerAddress: { max: MAX, windowMs: 60_000 } } })
    ticketsApp = await tickets.newApp()
  })
  afterAll(async () => {
    await tickets?.stop()
  })

  it("each naming a made-up issuer are counted for the address like the app's tokens: past the limit, 429 before the lookup", async () => {
    asked.length = 0
    const claimNaming = async (buyerDid: string) => {
      const { keypair } = await generateDidKeyKeypair('ES256K')
      const buyerAssertionJwt = await mintServiceJwt({ keypair, iss: buyerDid, aud: tickets.serviceDid, lxm: CLAIM })
      const body = { environment: 'test', eventUri: `at://${buyerDid}/community.lexicon.calendar.event/3kabc`, ticketTypeId: `tier_${'0'.repeat(24)}`, buyerDid, buyerAssertionJwt }
      return xrpcPost(tickets, CLAIM, body, bearer(await ticketsApp.jwt(CLAIM)))
    }
    for (let i = 0; i < MAX; i++) expectError(await claimNaming(madeUpPlcDid()), 400, 'BuyerAssertionInvalid', /UnresolvableIssuer/)
    // before, every assertion was looked up, however many issuers the address named
    expectError(await claimNaming(madeUpPlcDid()), 429, 'RateLimitExceeded', /too many unknown service-auth issuers from this address/)
    expect(asked).toHaveLength(MAX)
  })
})

describe('did:key issuers no app is registered for', () => {
  let keys: TestStack
  let keysApp: TestApp
  beforeAll(async () => {
    keys = await startStack('issuer-lookups-unregistered', { plcUrl: plcUrlOf(plc), limits: { issuerLookupsPerAddress: { max: MAX, windowMs: 60_000 } } })
    keysApp = await keys.newApp()
  })
  afterAll(async () => {
    await keys?.stop()
  })
  const unregistered = async () => {
    const { did, keypair } = await generateDidKeyKeypair('ES256K')
    return { did, jwt: (lxm: string) => mintServiceJwt({ keypair, iss: did, aud: keys.serviceDid, lxm }) }
  }

  it('are counted for the address once the gateway says so, each once: past the limit, 429 before auth', async () => {
    // one unknown app calling again and again (misconfigured, not forged) is one issuer
    const same = await unregistered()
    for (let i = 0; i < MAX + 2; i++) expectError(await xrpcGet(keys, GET_CONFIG, { environment: 'test' }, bearer(await same.jwt(GET_CONFIG))), 404, 'AppNotRegistered')
    expectOk(await getConfig(keys, keysApp, 'test'))
    // counted before a method renames it (availability answers AppUnauthorized)
    const renamed = await unregistered()
    const eventUri = `at://${renamed.did}/community.lexicon.calendar.event/3kabc`
    expectError(await xrpcGet(keys, AVAILABILITY, { environment: 'test', eventUri }, bearer(await renamed.jwt(AVAILABILITY))), 403, 'AppUnauthorized')
    // the third fills the address's window; the fourth, past the limit, keeps its answer (nothing tells an unknown
    // did:key app before the gateway), and the next call of the address, a registered app's included, is refused
    // before auth (before, made-up did:key apps each cost a signature check and a gateway trip, without end)
    const third = await unregistered()
    expectError(await xrpcGet(keys, GET_CONFIG, { environment: 'test' }, bearer(await third.jwt(GET_CONFIG))), 404, 'AppNotRegistered')
    const fourth = await unregistered()
    expectError(await xrpcGet(keys, GET_CONFIG, { environment: 'test' }, bearer(await fourth.jwt(GET_CONFIG))), 404, 'AppNotRegistered')
    expectError(await getConfig(keys, keysApp, 'test'), 429, 'RateLimitExceeded', /too many unknown service-auth issuers from this address/)
  })
})

describe('the directory away', () => {
  let other: TestStack
  beforeAll(async () => {
    other = await startStack('issuer-lookups-away', { plcUrl: plcUrlOf(plc) })
  })
  afterAll(async () => {
    await other?.stop()
    directoryDown = false
  })

  it("a directory failing for now is 503 ServiceUnavailable with Retry-After (the app may retry), a DID it does not know 401 UnresolvableIssuer", async () => {
    const { keypair } = await generateDidKeyKeypair('ES256K')
    const callOther = async () => xrpcGet(other, GET_CONFIG, { environment: 'test' }, bearer(await mintServiceJwt({ keypair, iss: madeUpPlcDid(), aud: other.serviceDid, lxm: GET_CONFIG })))
    directoryDown = true
    const away = await callOther()
    expectError(away, 503, 'ServiceUnavailable', /could not be fetched just now/)
    expect(Number(away.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    directoryDown = false
    expectError(await callOther(), 401, 'UnresolvableIssuer')
  })

  it("a buyer's assertion whose issuer cannot be looked up for now is 503 too, not BuyerAssertionInvalid (the app may retry)", async () => {
    const otherApp = await other.newApp()
    const buyerDid = madeUpPlcDid()
    const { keypair } = await generateDidKeyKeypair('ES256K')
    const buyerAssertionJwt = await mintServiceJwt({ keypair, iss: buyerDid, aud: other.serviceDid, lxm: CLAIM })
    const body = { environment: 'test', eventUri: `at://${buyerDid}/community.lexicon.calendar.event/3kabc`, ticketTypeId: `tier_${'0'.repeat(24)}`, buyerDid, buyerAssertionJwt }
    const claim = async () => xrpcPost(other, CLAIM, body, bearer(await otherApp.jwt(CLAIM)))
    directoryDown = true
    const away = await claim()
    expectError(away, 503, 'ServiceUnavailable', /could not be fetched just now/)
    expect(Number(away.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    directoryDown = false
    // the directory back: the issuer it does not know is the assertion's fault
    expectError(await claim(), 400, 'BuyerAssertionInvalid', /UnresolvableIssuer/)
  })
})
