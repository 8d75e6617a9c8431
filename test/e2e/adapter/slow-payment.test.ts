/**
 * A payment that takes longer than the gateway waits for the payments subgraph (SUBGRAPH_TIMEOUT_MS): the charge goes
 * on in the payments subgraph, so the buyer's pay submission is sent back to the checkout's page, which says what
 * became of it (being processed, then completed), not to a page asking the buyer to try again.
 */
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectOk, httpRequest } from './helpers'
import { initiate, paymentStatus, product } from './payment-helpers'

let stack: TestStack
let app: TestApp

beforeAll(async () => {
  stack = await startStack('slow-payment', { subgraphTimeoutMs: 1000, testProcessorLatencyMs: 2500 })
  app = await stack.newApp()
})
afterAll(async () => {
  await stack.stop()
})

it('sends the buyer back to the checkout page, which shows the payment being processed and then completed', async () => {
  const { token: statusToken, url } = expectOk(await initiate(stack, app, product(app.did, { amount: 1500, description: 'Poster' })))
  const expYear = String(new Date().getUTCFullYear() + 2)
  const paid = await httpRequest(`${url}/pay`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ number: '4242424242424242', expMonth: '12', expYear, cvc: '123', name: 'Bea Buyer' }).toString(),
    redirect: 'manual',
  })
  expect(paid.status).toBe(303)
  expect(paid.headers.get('location')).toBe(new URL(url).pathname)
  const processing = await httpRequest(url)
  expect(processing.status).toBe(200)
  expect(processing.text).toContain('Your payment is being processed')
  for (let i = 0; i < 50 && expectOk(await paymentStatus(stack, app, statusToken)).status !== 'completed'; i++) await new Promise((r) => setTimeout(r, 100))
  expect(expectOk(await paymentStatus(stack, app, statusToken)).status).toBe('completed')
})
