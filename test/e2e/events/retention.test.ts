/**
 * The test environment's deliveries go 30 days after they were made once delivered or failed (the events process
 * prunes every hour); live deliveries, test ones within the 30 days, and those still pending or held, stay.
 */
import { createDelivery, newDeliveryId, pruneTestDeliveries, TEST_DELIVERY_RETENTION_MS, type DeliveryStatus, type NewDelivery } from '@svc/events'
import { startStack, type TestStack } from '../../stack'

let stack: TestStack
beforeAll(async () => {
  stack = await startStack('delivery-retention', { workers: false })
})
afterAll(async () => {
  await stack?.stop()
})

const DAY = 24 * 3600 * 1000

async function deliveryMade(environment: 'test' | 'live', ageMs: number, status: DeliveryStatus = 'delivered'): Promise<string> {
  const d: NewDelivery = { id: newDeliveryId(), appDid: 'did:web:retention.example.com', environment, eventId: null, eventType: 'app.webhook.test', source: 'test', createdAt: new Date(), data: { test: true } }
  await createDelivery(stack.deliveryLog, d)
  // by the driver: mongoose keeps createdAt as it was made
  await stack.events.Delivery.collection.updateOne({ _id: d.id as never }, { $set: { createdAt: new Date(Date.now() - ageMs), status } })
  return d.id
}

it('deletes the test deliveries made more than 30 days ago, and nothing else', async () => {
  expect(TEST_DELIVERY_RETENTION_MS).toBe(30 * DAY)
  const oldTest = await Promise.all([deliveryMade('test', 31 * DAY), deliveryMade('test', 400 * DAY, 'failed')])
  const kept = await Promise.all([
    deliveryMade('test', 29 * DAY),
    deliveryMade('test', 0),
    deliveryMade('live', 31 * DAY),
    deliveryMade('live', 400 * DAY, 'failed'),
    // not over: a job will still send them
    deliveryMade('test', 31 * DAY, 'held'),
    deliveryMade('test', 31 * DAY, 'pending'),
  ])

  expect(await pruneTestDeliveries({ models: stack.events })).toBe(2)
  expect(await stack.events.Delivery.countDocuments({ _id: { $in: oldTest } })).toBe(0)
  expect(await stack.events.Delivery.countDocuments({ _id: { $in: kept } })).toBe(kept.length)
  // again: nothing more goes
  expect(await pruneTestDeliveries({ models: stack.events })).toBe(0)
})
