/**
 * The database is the record of what is due (docs/events.md, "What is due"). A delivery that is `pending` or `held`
 * must have its job on `webhook-deliveries`; Redis may have lost it (restarted without persistence, flushed, failed
 * over). This finds every such delivery whose job is missing and adds it again for the rest of its run, its next
 * attempt at the delivery's nextAttemptAt (at once when that has passed). The job id is the delivery id, so a job
 * that exists is never doubled, and reconcilers running at once in several processes add each job once. A job that
 * ended while its delivery stayed open (its outcome could not be written) counts as missing.
 */
import type { Queue } from 'bullmq'
import type { Logger } from 'pino'
import type { DeliveryDoc, EventsModels } from '../models'
import type { DeliveryJob } from '../queues'
import { requeueLostDelivery, type UnloggedAttempts } from './deliveries'

export interface ReconcileResult {
  /** open deliveries looked at */
  checked: number
  /** of those, added again because their job was gone */
  requeued: number
}

/** Open deliveries are read by status, one equality each (the `status` index; what FerretDB answers from an index). */
const OPEN = ['pending', 'held'] as const

/**
 * A job that ended (failed for good, or completed) while its delivery is still open: its worker could not record the
 * outcome (the database was away, or it died between the two). Past this grace, during which the worker's own
 * `failed` handler settles it, the job counts as missing. A minute: the job's end is the worker's clock, compared
 * with the reconciler's, and a few seconds between machines' clocks would have the job replaced before its worker
 * settled it (the new job then sending a delivery just marked failed).
 */
export const ENDED_JOB_GRACE_MS = 60_000

/** How far a run is: shown on the board while it works through many open deliveries (after Redis lost its data). */
export interface ReconcileProgress extends ReconcileResult {
  /** the open deliveries found so far (each status is read before it is worked through) */
  found: number
}

/** A run reports its progress every this many deliveries, and at its end. */
export const RECONCILE_PROGRESS_EVERY = 200

export async function reconcileDeliveries(
  models: EventsModels,
  queue: Queue<DeliveryJob>,
  log: Logger,
  now = new Date(),
  onProgress: (progress: ReconcileProgress) => Promise<void> = async () => undefined,
): Promise<ReconcileResult> {
  let checked = 0
  let requeued = 0
  let found = 0
  for (const status of OPEN) {
    // only what names the delivery: the few whose job is missing are read in full by requeueLostDelivery
    const open = (await models.Delivery.find({ status }, { _id: 1, status: 1, attemptCount: 1, nextAttemptAt: 1 }).lean()) as DeliveryDoc[]
    found += open.length
    for (const d of open) {
      checked++
      if (checked % RECONCILE_PROGRESS_EVERY === 0) await onProgress({ found, checked, requeued })
      const job = await queue.getJob(d._id)
      // the attempts the ended job names that its worker could not log (its last, sent when the outcome's write failed)
      let unlogged: UnloggedAttempts | undefined
      if (job) {
        const state = await job.getState()
        if ((state !== 'failed' && state !== 'completed') || (job.finishedOn ?? now.getTime()) > now.getTime() - ENDED_JOB_GRACE_MS) continue
        // the delivery's document decides what is left of its run; the ended job would block the new one's id
        // (a reconciler of another process may have replaced it meanwhile: a locked job is not removed, and the add
        // below is then a no-op)
        await job.remove().catch(() => undefined)
        unlogged = { inFlight: job.data.inFlight ?? null, interrupted: job.data.interrupted ?? [] }
      }
      if (!(await requeueLostDelivery(models, queue, d._id, now, unlogged))) continue // settled meanwhile
      requeued++
      log.warn({ deliveryId: d._id, status: d.status, attemptCount: d.attemptCount, nextAttemptAt: d.nextAttemptAt }, 'reconcile: the delivery had no job; queued again')
    }
  }
  if (requeued > 0) log.info({ checked, requeued }, 'reconcile: deliveries queued again')
  await onProgress({ found, checked, requeued })
  return { checked, requeued }
}
