/** The service's periodic sweep expires abandoned checkouts without any read of them. */
import { randomBytes } from 'node:crypto'
import pino from 'pino'
import { isolate } from '@svc/testing/src/isolation'
import { testCallerKeys } from '@svc/testing/src/internal-context'
import { createProcessorRegistry, initiateCheckout, startPaymentsService, type PaymentsModels } from '../src'
import { authorizationFor, newDid, productOf, serving } from './helpers'

const keys = testCallerKeys()
const APP = 'did:web:sweep-app.example.com'
let payments: { url: string; models: PaymentsModels; stop(): Promise<void> }

beforeAll(async () => {
  payments = await startPaymentsService({
    mongoUrl: isolate('payments_sweeper').mongoUrl,
    callerKeys: keys,
    // nothing listens there: these tests reach no operation that reads another domain
    gatewayUrl: 'http://127.0.0.1:1/graphql',
    host: '127.0.0.1',
    port: 0,
    logger: pino({ level: 'silent' }),
    serviceDid: 'did:web:svc.test',
    checkoutUrl: 'http://checkout.test',
    tokenSecret: randomBytes(32).toString('hex'),
    checkoutExpirySeconds: 1,
    liveProcessor: 'none',
    sweepIntervalMs: 100,
  })
})

afterAll(async () => {
  await payments?.models.Checkout.db.dropDatabase().catch(() => undefined)
  await payments?.stop()
})

test('a checkout past its expiry is failed (expired) by the sweep alone', async () => {
  const creator = newDid()
  // started on the service's database by the domain function (initiate's reads of other domains need the gateway)
  const domain = {
    models: payments.models,
    processors: createProcessorRegistry({ liveProcessor: 'none' }, payments.models),
    serviceDid: 'did:web:svc.test',
    checkoutUrl: 'http://checkout.test',
    tokenSecret: randomBytes(32).toString('hex'),
    checkoutExpirySeconds: 1,
  }
  const { checkoutId } = await initiateCheckout(serving(domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator) })
  const deadline = Date.now() + 10_000
  let doc = await payments.models.Checkout.findById(checkoutId).lean()
  while (doc?.status === 'pending' && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100))
    doc = await payments.models.Checkout.findById(checkoutId).lean()
  }
  expect(doc).toMatchObject({ status: 'failed', failureReason: 'expired' })
  expect((await payments.models.Settlement.findById(checkoutId).lean())?.by).toBe('expiry')
})
