/**
 * Secrets are never logged. Every process of the stack logs at debug level, with the processes' own logger options,
 * into memory while requests carry each kind of credential and capability the service hands out: an app's JWT, an
 * API key, the status token (in a query), the browser checkout token and a ticket page token (in paths, on matched
 * and unmatched routes), a dashboard sign-in link and its session cookie, a buyer's assertion, and the webhook signing
 * secret that signs the deliveries; and refused ones: a replayed JWT, an unknown API key, a malformed token. No log
 * line holds the secret part of any of them, and the lines of those requests are there.
 */
import { randomBytes } from 'node:crypto'
import { connect } from 'node:net'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectOk, httpRequest, readRequestLog, updateConfig, xrpcGet } from './helpers'
import { ALL_PERMISSIONS, testEvent } from './events-helpers'
import { waitForStatus } from '../events/helpers/events'
import { startReceiver, type Receiver } from '../events/helpers/receiver'
import { approvedCreator, initiate, product, signInWithLink, STATUS } from './payment-helpers'
import { CLAIM, claimAs, enableTickets, newSigner, setUpEvent } from '../tickets/helpers'

const logs: string[] = []
let stack: TestStack
let app: TestApp
let receiver: Receiver

beforeAll(async () => {
  stack = await startStack('log-redaction', { logs, allowLoopbackWebhooks: true })
  app = await stack.newApp()
  receiver = await startReceiver()
})
afterAll(async () => {
  await receiver?.close()
  await stack?.stop()
})

/** Sends one request line as written (no client would send it so) and answers the response's first bytes. */
function rawRequest(base: string, line: string): Promise<string> {
  const { hostname, port } = new URL(base)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(`${line}\r\nHost: ${hostname}\r\nConnection: close\r\n\r\n`))
    let answer = ''
    socket.on('data', (chunk) => (answer += String(chunk)))
    socket.on('end', () => resolve(answer))
    socket.on('error', reject)
  })
}

/** The part of a secret a log may never show: its last 16 characters (a key's prefix may be logged to name it). */
const secretPart = (secret: string): string => secret.slice(-16)

it('no log line holds a credential or capability that requests carried, on matched and unmatched routes', async () => {
  const secrets: Record<string, string> = {}

  // an app's JWT and API key
  const jwt = await app.jwt(STATUS)
  secrets.jwt = jwt
  secrets.apiKey = await app.apiKey('test', ALL_PERMISSIONS)
  expectOk(await httpRequest(`${stack.checkoutUrl}/api/app/developer/config?app=${encodeURIComponent(app.did)}&environment=test`, { headers: bearer(secrets.apiKey) }))

  // refused: a bad parameter, then the same JWT again (replayed), an unknown API key, a malformed token
  secrets.replayedJwt = await app.jwt(STATUS)
  expect((await xrpcGet(stack, STATUS, { token: 'x' }, bearer(secrets.replayedJwt))).status).toBe(400)
  expect((await xrpcGet(stack, STATUS, { token: 'x' }, bearer(secrets.replayedJwt))).status).toBe(401)
  secrets.unknownApiKey = `svc_rk_test_${randomBytes(24).toString('base64url')}`
  expect((await httpRequest(`${stack.checkoutUrl}/api/app/developer/config?app=${encodeURIComponent(app.did)}&environment=test`, { headers: bearer(secrets.unknownApiKey) })).status).toBe(401)
  secrets.notAJwt = `eyJ${randomBytes(30).toString('base64url')}`
  expect((await xrpcGet(stack, STATUS, { token: 'x' }, bearer(secrets.notAJwt))).status).toBe(401)

  // the status token in a query, the browser token in a path
  const creator = await approvedCreator(stack, app)
  secrets.dashboardCookie = creator.cookie.slice(creator.cookie.indexOf('=') + 1)
  const started = expectOk(await initiate(stack, app, product(creator.did)))
  secrets.statusToken = started.token
  secrets.browserToken = new URL(started.url).pathname.split('/').pop()!
  expectOk(await xrpcGet(stack, STATUS, { token: started.token }, bearer(jwt)))
  expect((await xrpcGet(stack, 'network.svc.payment.unknownMethod', { token: started.token }, bearer(await app.jwt(STATUS)))).status).toBe(501)
  expect((await httpRequest(started.url)).status).toBe(200)
  expect((await httpRequest(`${started.url}/no-such-page?token=${started.token}`)).status).toBe(404)
  // the same token percent-encoded, which the query parser decodes: masked all the same
  const encodedStatus = `${stack.apiUrl}/xrpc/${STATUS}?token=${started.token.replace(/^pst_test_/, 'pst%5Ftest%5F')}`
  expect((await httpRequest(encodedStatus, { headers: bearer(await app.jwt(STATUS)) })).status).toBe(200)

  // a ticket page token, from a free claim with organizer and buyer assertions
  await enableTickets(stack, app)
  const organizer = await newSigner(stack)
  const buyer = await newSigner(stack)
  const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ name: 'Free', priceAmount: 0, currency: 'usd', capacity: 5 }])
  const assertion = await buyer.assertion(CLAIM)
  secrets.buyerAssertion = assertion
  const claimed = expectOk(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }, { assertion, idempotencyKey: randomBytes(8).toString('hex') }))
  const ticketUrl: string = claimed.ticket.url
  secrets.ticketPageToken = new URL(ticketUrl).pathname.split('/').pop()!
  expect((await httpRequest(ticketUrl)).status).toBe(200)
  expect((await httpRequest(`${ticketUrl}/no-such-page`)).status).toBe(404)
  expect((await httpRequest(`${stack.apiUrl}/no-such-route/${secrets.ticketPageToken}?token=${secrets.ticketPageToken}`)).status).toBe(404)

  // a dashboard sign-in link and the session it opens
  const signIn = await stack.dashboardLoginUrl(creator.did, 'test')
  secrets.signInToken = new URL(signIn).pathname.split('/').pop()!
  // the link's page (a GET) and its Sign in button (a POST to the same path) both carry the token in their path
  expect((await signInWithLink(signIn)).signIn.status).toBe(303)
  const encodedSignIn = await stack.dashboardLoginUrl(creator.did, 'test')
  secrets.encodedSignInToken = new URL(encodedSignIn).pathname.split('/').pop()!
  expect((await httpRequest(encodedSignIn.replace(/dsl_/, 'dsl%5F'), { redirect: 'manual' })).status).toBe(200)

  // the webhook signing secret, as the update answers it, and a test event signed with it
  secrets.signingSecret = expectOk(await updateConfig(stack, app, { environment: 'test', webhookUrl: receiver.url })).webhook.signingSecret
  const queued = expectOk(await testEvent(stack, { app: app.did, environment: 'test' }, bearer(secrets.apiKey)))
  await waitForStatus(stack, queued.deliveryId, 'delivered')
  expect(receiver.requests.map((r) => r.headers['svc-delivery-id'])).toContain(queued.deliveryId)

  // credentials and capabilities a caller put in URLs where none belongs: in a query, in a checkout path's later segment
  secrets.jwtInUrl = await app.jwt(STATUS)
  const misplaced = `key=${secrets.apiKey}&secret=${encodeURIComponent(secrets.signingSecret!)}&access_token=${secrets.jwtInUrl}`
  expect((await httpRequest(`${stack.apiUrl}/xrpc/${STATUS}?token=x&${misplaced}`)).status).toBe(401)
  expect((await httpRequest(`${stack.checkoutUrl}/api/app/developer/config?app=${encodeURIComponent(app.did)}&${misplaced}`)).status).toBe(401)
  expect((await httpRequest(`${stack.checkoutUrl}/checkout/x/${secrets.browserToken}?${misplaced}`)).status).toBe(404)
  // a credential of no known shape, in a parameter named for it: a scraper's metrics token, an operator's token
  secrets.metricsToken = stack.secrets.metricsToken
  secrets.operatorToken = stack.secrets.operatorToken
  expect((await httpRequest(`${stack.apiUrl}/metrics?token=${secrets.metricsToken}`)).status).toBe(401)
  expect((await httpRequest(`${stack.checkoutUrl}/api/app/developer/config?app=${encodeURIComponent(app.did)}&access_token=${secrets.operatorToken}`)).status).toBe(401)
  // a fragment no client sends, in a crafted request line: the router matches the route before the `#`
  const fragment = await rawRequest(stack.checkoutUrl, `GET /api/app/developer/config#${secrets.signingSecret} HTTP/1.1`)
  expect(fragment).toMatch(/^HTTP\/1\.1 401 /)

  // nor does the request log the developer routes write
  const recorded = await readRequestLog(stack, {})
  expect(recorded.map((r) => r.path)).toContain('/api/app/developer/config')
  expect(recorded.filter((r) => r.path.includes(secretPart(secrets.signingSecret!)))).toEqual([])

  // the requests were logged
  const text = logs.join('')
  expect(text).toContain('/xrpc/network.svc.payment.status')
  expect(text).toContain('/checkout/')
  expect(text).toContain('/dashboard')

  expect(Object.fromEntries(Object.entries(secrets).map(([name, secret]) => [name, secret.slice(0, 4)]))).toMatchObject({
    statusToken: 'pst_',
    browserToken: 'cko_',
    ticketPageToken: 'tkp_',
    dashboardCookie: 'dss_',
    signInToken: 'dsl_',
    apiKey: 'svc_',
    signingSecret: 'whse',
  })
  for (const [name, secret] of Object.entries(secrets)) {
    expect(secret.length).toBeGreaterThanOrEqual(24)
    expect({ name, lines: logs.filter((line) => line.includes(secretPart(secret))) }).toEqual({ name, lines: [] })
  }
})
