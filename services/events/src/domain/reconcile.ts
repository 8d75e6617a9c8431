/**
 * The database is the record of what is due (docs/events.md, "What is due"). A delivery that is `pending` or `held`
 * must have its job on `webhook-deliveries`; Redis may have lost it (restarted without persistence, flushed, failed
 * over). This finds every such delivery whose job is missing and adds it again for the rest of its run, its next
 * attempt at the delivery's nextAttemptAt (at once when that has passed). The job id is the delivery id, so a job
 * that exists is never doubled, and reconcilers running at once in several processes add each job once.
 */
import type { Queue } from 'bullmq'
import type { Logger } from 'pino'
import type { DeliveryDoc, EventsModels } from '../models'
import type { DeliveryJob } from '../queues'
import { requeueLostDelivery } from './deliveries'

export interface ReconcileResult {
  /** open deliveries looked at */
  checked: number
  /** of those, added again because their job was gone */
  requeued: number
}

/** Open deliveries are read by status, one equality each (what FerretDB answers from an index). */
const OPEN = ['pending', 'held'] as const

export async function reconcileDeliveries(models: EventsModels, queue: Queue<DeliveryJob>, log: Logger, now = new Date()): Promise<ReconcileResult> {
  let checked = 0
  let requeued = 0
  for (const status of OPEN) {
    // only what names the delivery: the few whose job is missing are read in full by requeueLostDelivery
    const open = (await models.Delivery.find({ status }, { _id: 1, status: 1, attemptCount: 1, nextAttemptAt: 1 }).lean()) as DeliveryDoc[]
    for (const d of open) {
      checked++
      if (await queue.getJob(d._id)) continue
      if (!(await requeueLostDelivery(models, queue, d._id, now))) continue // settled meanwhile
      requeued++
      log.warn({ deliveryId: d._id, status: d.status, attemptCount: d.attemptCount, nextAttemptAt: d.nextAttemptAt }, 'reconcile: the delivery had no job; queued again')
    }
  }
  if (requeued > 0) log.info({ checked, requeued }, 'reconcile: deliveries queued again')
  return { checked, requeued }
}
