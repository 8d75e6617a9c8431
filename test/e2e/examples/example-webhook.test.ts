/**
 * The README's webhook walk-through is runnable: `npm run example:webhook` (its own process, as a developer runs
 * it) against the whole stack in this process, with the event workers delivering to the example's receiver on
 * loopback (test environment, DEV_ALLOW_LOOPBACK_WEBHOOKS). It must receive the test event verified, read it as
 * delivered in the log, and receive it again after a redrive.
 */
import { startStack, type TestStack } from '../../stack'
import { runExample } from './run-example'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('example_webhook', { allowLoopbackWebhooks: true })
})
afterAll(async () => {
  await stack?.stop()
})

test('npm run example:webhook configures a webhook, receives a verified test event, lists it and redrives it', async () => {
  const stdout = await runExample(stack, 'example-webhook.ts')
  expect(stdout).toMatch(/3\. webhook configured: true; signing secret whsec_…\S{4} \(store it; an update naming the URL shows it again\)/)
  const deliveryId = /4\. test event queued: (whd_[0-9a-f]{32})/.exec(stdout)?.[1]
  expect(deliveryId).toBeDefined()
  expect(stdout).toContain(`5. receiver verified and acknowledged ${deliveryId} (app.webhook.test)`)
  expect(stdout).toContain(`6. delivery log: ${deliveryId} delivered after 1 attempt(s)`)
  expect(stdout).toContain('7. redrive queued 1')
  expect(stdout).toContain(`the receiver got ${deliveryId} again and answered it as already processed (2xx)`)
  const delivery = await stack.events.Delivery.findById(deliveryId).lean()
  expect(delivery).toMatchObject({ status: 'delivered', attemptCount: 2, run: 2 })
}, 180_000)
