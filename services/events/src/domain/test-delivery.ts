/**
 * The test-event utility's delivery (docs/events.md, "Developer utility routes"): every call a new random delivery
 * id, an `app.webhook.test` envelope, queued at once. It fulfils nothing: its data says so. A delivery that could not
 * be queued is removed again (503 ServiceUnavailable), so the log never lists a test delivery nothing will send.
 */
import { ContractError } from '@svc/errors'
import type { DeliveryDoc } from '../models'
import type { EventsDomain } from './context'
import { createDelivery, enqueueDelivery } from './deliveries'
import { newDeliveryId, TEST_EVENT_TYPE } from './envelope'
import type { Environment } from '@svc/vocabulary'

export const TEST_EVENT_MESSAGE = 'Test event from the svc developer tools: this delivery does not fulfil anything.'

export async function createTestDelivery(
  domain: Pick<EventsDomain, 'models' | 'redis' | 'redisPrefix' | 'deliveries' | 'logger'>,
  appDid: string,
  environment: Environment,
  now: Date = new Date(),
): Promise<DeliveryDoc> {
  const delivery = await createDelivery(domain, {
    id: newDeliveryId(),
    appDid,
    environment,
    eventId: null,
    eventType: TEST_EVENT_TYPE,
    source: 'test',
    createdAt: now,
    data: { test: true, message: TEST_EVENT_MESSAGE, requestedAt: now.toISOString() },
  })
  try {
    await enqueueDelivery(domain.deliveries, delivery)
  } catch (err) {
    // Not queued: remove it, so the log never shows a test delivery that nothing will send; the caller may retry. The
    // add may have reached Redis with only its answer lost: its job goes too (best effort), or a probe missing from
    // the log would be sent besides the retry's
    await domain.deliveries.remove(delivery._id).catch(() => undefined)
    await domain.models.Delivery.deleteOne({ _id: delivery._id }).catch(() => undefined)
    domain.logger.error({ err, deliveryId: delivery._id }, 'test delivery: could not queue it')
    throw new ContractError('ServiceUnavailable', 'the delivery queue is unavailable; retry with backoff')
  }
  return delivery
}
