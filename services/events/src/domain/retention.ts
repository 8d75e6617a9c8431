/**
 * The test environment's deliveries are kept 30 days (docs/operations.md, "Retention"), as Stripe keeps test events:
 * a test key may make hundreds of test events a minute, and without an end they would grow with every integration's
 * trials. Live deliveries are the record of what was sent and are kept.
 */
import type { EventsDomain } from './context'

export const TEST_DELIVERY_RETENTION_MS = 30 * 24 * 3600 * 1000

/**
 * Deletes the test deliveries made before the retention that are over: delivered or failed (the events process runs
 * it every hour); answers how many went. One still pending or held has a job that will send it (an endpoint paused
 * for weeks, a run redriven on day 29): it goes once its run is over.
 */
export async function pruneTestDeliveries(d: Pick<EventsDomain, 'models'>, now: Date = new Date()): Promise<number> {
  const { deletedCount } = await d.models.Delivery.deleteMany({
    environment: 'test',
    status: { $in: ['delivered', 'failed'] },
    createdAt: { $lt: new Date(now.getTime() - TEST_DELIVERY_RETENTION_MS) },
  })
  return deletedCount
}
