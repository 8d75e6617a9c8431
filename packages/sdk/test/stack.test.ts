/**
 * The SDK against the real service in-process (startStack: adapter → gateway → subgraphs → FerretDB, real HTTP,
 * real service-auth verification with jti replay checks): typed calls, contract errors as SvcError with the
 * exact status, code and Svc-Request-Id, and the payment methods that are not served yet (501).
 */
import { registerApp } from '@svc/apps'
import { generateDidKeyKeypair, type ServiceJwtAlg } from '@svc/service-auth'
import { startStack, type TestStack } from '@svc/testing'
import { buildProduct, createSvcClient, initiateCheckout, pollPaymentStatus, SvcError, type SvcClient } from '../src'

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
    await registerApp(stack.models, {
      did: kp.did,
      environment,
      appUrl: 'https://app.example.com',
      feeShareBps: 500,
      ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd' },
    })
  }
  const base = { baseUrl: stack.apiUrl, appDid: kp.did, serviceDid: stack.serviceDid }
  const client = opts.useKeypair
    ? createSvcClient({ ...base, keypair: kp.keypair })
    : createSvcClient({ ...base, privateKeyHex: kp.privateKeyHex, alg })
  return { did: kp.did, client }
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
      webhook: { configured: false, paused: false },
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

  it('initiate and status are not served yet: 501 MethodNotImplemented, surfaced at once (not retried)', async () => {
    const { did, client } = await newClient()
    const product = buildProduct({
      recipientDid: did,
      paymentType: 'shop',
      amount: 1200,
      currency: 'usd',
      appOrderId: 'order-1',
      description: 'A thing',
      returnUrl: 'https://app.example.com/done',
      cancelUrl: 'https://app.example.com/cancel',
    })
    for (const err of [
      await caught(client.initiatePayment({ product })),
      await caught(initiateCheckout(client, product, { initialDelayMs: 1 })),
      await caught(client.getPaymentStatus({ token: 'tok' })),
      await caught(pollPaymentStatus(client, 'tok', { initialDelayMs: 1 })),
    ]) {
      expect({ status: err.status, error: err.error, transient: err.transient }).toEqual({ status: 501, error: 'MethodNotImplemented', transient: false })
      expect(err.requestId).toMatch(REQUEST_ID)
    }
  })

  it('retired methods are not callable through the client', async () => {
    const { client } = await newClient()
    await expect((client as SvcClient).call('network.svc.payment.lookup' as never, {} as never)).rejects.toThrow(/unknown or retired/)
  })
})
