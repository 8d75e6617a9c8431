/**
 * A ticket checkout whose hold is slow to settle (a large hold's tickets take the tickets domain longer than the
 * payments domain waits): the buyer's pay, once charged, answers the checkout processing, never an error that reads
 * as "pay again"; reads answer it processing while the settle fails, sharing one run rather than each starting
 * another; and the first read after the tickets domain answers finishes it, completed, charged once.
 */
import { ContractError } from '@svc/errors'
import { getPaymentStatus, payCheckout, ProcessorRegistry, TestProcessor, type PaymentsDomain } from '../src'
import { startTicketCheckout } from '../src/domain/start-ticket-checkout'
import { authorizationFor, browserTokenOf, GOOD_CARD, newDid, openDomain, serving, type TestDomain } from './helpers'

const APP = 'did:web:ticket-settle-app.example.com'
let t: TestDomain
let processor: TestProcessor
const settle = { failing: true, inFlight: 0, most: 0, calls: 0 }
/** how long a settle takes to fail: the five parallel reads of the first test each read the checkout first, and must all join it meanwhile, on a loaded machine too */
const SETTLE_MS = 1000

const holds: NonNullable<PaymentsDomain['holds']> = {
  secure: async () => true,
  settle: async () => {
    settle.calls++
    settle.most = Math.max(settle.most, ++settle.inFlight)
    try {
      // as the gateway client gives up on the tickets domain: after a wait, unavailable
      await new Promise<void>((resolve) => setTimeout(resolve, SETTLE_MS))
      if (settle.failing) throw new ContractError('ServiceUnavailable', 'the gateway did not answer in time')
    } finally {
      settle.inFlight--
    }
  },
}

beforeAll(async () => {
  t = await openDomain('payments_ticket_settle', { holds })
  processor = new TestProcessor(t.models.TestCharge)
  t.domain.processors = new ProcessorRegistry({ test: processor, live: null })
})
afterAll(async () => {
  await t?.close()
})

/** A hold's checkout of `tickets` tickets at 25.00, its hold due in 10 minutes. */
async function startHold(holdId: string, tickets: number) {
  const organizer = newDid()
  return startTicketCheckout(serving(t.domain, { checkout: authorizationFor(organizer) }), {
    appDid: APP,
    environment: 'test',
    holdId,
    organizerDid: organizer,
    description: `${tickets} × General`,
    amount: 2500 * tickets,
    tickets,
    currency: 'usd',
    expiresAt: new Date(t.clock.now.getTime() + 600_000).toISOString(),
    returnUrl: null,
    cancelUrl: null,
  })
}

test('charged, the pay answers processing; reads share one settle and answer processing until it succeeds', async () => {
  const started = await startHold('hold_000000000000000000000001', 2)
  const paid = await payCheckout(t.domain, browserTokenOf(started.url), GOOD_CARD)
  expect(paid.status).toBe('processing')

  settle.calls = 0
  settle.most = 0
  const reads = await Promise.all(Array.from({ length: 5 }, () => getPaymentStatus(t.domain, { token: started.token, appDid: APP })))
  expect(reads.map((r) => r.status)).toEqual(Array(5).fill('processing'))
  expect(settle.most).toBe(1)
  expect(settle.calls).toBe(1)

  settle.failing = false
  expect((await getPaymentStatus(t.domain, { token: started.token, appDid: APP })).status).toBe('completed')
  expect(await t.models.TestCharge.countDocuments({})).toBe(1)
})

test('an expired ticket checkout whose hold cannot be released now: reads answer it as it is, not an error, and the first read after the tickets domain answers fails it expired', async () => {
  const started = await startHold('hold_000000000000000000000002', 1)
  const expiresAt = (await t.models.Checkout.findById(started.checkoutId, { expiresAt: 1 }).lean())!.expiresAt
  t.clock.advance(expiresAt.getTime() - t.clock.now.getTime() + 1000)
  settle.failing = true
  expect((await getPaymentStatus(t.domain, { token: started.token, appDid: APP })).status).toBe('pending')
  expect((await getPaymentStatus(t.domain, { token: started.token, appDid: APP })).status).toBe('pending')
  settle.failing = false
  expect((await getPaymentStatus(t.domain, { token: started.token, appDid: APP })).status).toBe('failed')
})
