/**
 * The per-address limit on /xrpc calls refused after a DID lookup: forged tokens naming made-up did:plc issuers each
 * make the service ask the PLC directory, until the address passes the limit; its calls are then refused 429 before
 * auth, asking nothing. Refusals that need no lookup are not counted.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomInt } from 'node:crypto'
import { generateDidKeyKeypair, mintServiceJwt } from '@svc/service-auth'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, GET_CONFIG, getConfig, xrpcGet } from './helpers'

const MAX = 3

let stack: TestStack
let app: TestApp
let plc: Server
/** the DIDs the PLC directory was asked for */
const asked: string[] = []

beforeAll(async () => {
  plc = createServer((req, res) => {
    asked.push(decodeURIComponent((req.url ?? '').slice(1)))
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => plc.listen(0, '127.0.0.1', resolve))
  const plcUrl = `http://127.0.0.1:${(plc.address() as AddressInfo).port}`
  stack = await startStack('auth-refusals', { plcUrl, limits: { authRefusalsPerAddress: { max: MAX, windowMs: 60_000 } } })
  app = await stack.newApp()
})
afterAll(async () => {
  await stack?.stop()
  await new Promise((resolve) => plc?.close(resolve))
})

const madeUpPlcDid = () => `did:plc:${Array.from({ length: 24 }, () => 'abcdefghijklmnopqrstuvwxyz234567'[randomInt(32)]).join('')}`

async function forged(aud = stack.serviceDid): Promise<Record<string, string>> {
  const { keypair } = await generateDidKeyKeypair('ES256K')
  return bearer(await mintServiceJwt({ keypair, iss: madeUpPlcDid(), aud, lxm: GET_CONFIG }))
}

it('does not count refusals that need no lookup', async () => {
  for (let i = 0; i < MAX + 2; i++) {
    expectError(await xrpcGet(stack, GET_CONFIG, { environment: 'test' }, await forged('did:web:elsewhere.example.com')), 401, 'BadJwtAudience')
    expectError(await xrpcGet(stack, GET_CONFIG, { environment: 'test' }, { authorization: 'Bearer not-a-jwt' }), 401, 'BadJwt')
  }
  expect(asked).toEqual([])
  expectOk(await getConfig(stack, app, 'test'))
})

it('refuses an address past the limit before auth: no more lookups, its calls 429 with Retry-After', async () => {
  const tokens = await Promise.all(Array.from({ length: MAX + 1 }, () => forged()))
  for (const headers of tokens) {
    expectError(await xrpcGet(stack, GET_CONFIG, { environment: 'test' }, headers), 401, 'UnresolvableIssuer')
  }
  expect(asked).toHaveLength(MAX + 1)

  const refused = await xrpcGet(stack, GET_CONFIG, { environment: 'test' }, await forged())
  expectError(refused, 429, 'RateLimitExceeded', /too many refused service-auth tokens from this address: at most 3 per 60 s/)
  const retryAfter = Number(refused.headers.get('retry-after'))
  expect(retryAfter).toBeGreaterThanOrEqual(1)
  expect(retryAfter).toBeLessThanOrEqual(60)
  expect(asked).toHaveLength(MAX + 1)

  // the limit is the address's: a valid app calling from it waits for the window too
  expectError(await getConfig(stack, app, 'test'), 429, 'RateLimitExceeded')
})
