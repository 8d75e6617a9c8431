/**
 * Held deliveries re-check their endpoint less and less often (delivery/processor.ts, holdRecheckDelayMs: up to about
 * an hour apart), yet one is sent soon after the app unpauses its endpoint (docs/events.md, "Delivery states"). Each
 * reconcile run (workers/reconciler.ts) asks, once per app environment that has held deliveries, for its endpoint
 * (the lookup an attempt makes, cache included); for one no longer paused, the delayed jobs of its held deliveries are
 * promoted: their next pick-up is now, within a reconcile period (plus DELIVERY_APP_CACHE_MS) of the unpause.
 *
 * Reads: the app environments with held deliveries (one aggregation on `status`, the index the reconciler reads by),
 * then only the ids of the held deliveries of those unpaused (equalities on appDid, environment and status: what
 * FerretDB answers from an index).
 */
import type { Queue } from 'bullmq'
import type { Logger } from 'pino'
import type { Environment } from '@svc/vocabulary'
import type { EventsModels } from '../models'
import type { DeliveryJob } from '../queues'
import type { EndpointClient } from './endpoint'

export interface ReleaseHeldResult {
  /** app environments with held deliveries */
  environments: number
  /** held deliveries whose delayed job was promoted (their endpoint is no longer paused) */
  released: number
}

export async function releaseUnpausedHolds(models: EventsModels, queue: Queue<DeliveryJob>, endpoints: Pick<EndpointClient, 'lookup'>, log: Logger): Promise<ReleaseHeldResult> {
  const pairs = await models.Delivery.aggregate<{ _id: { appDid: string; environment: Environment } }>([
    { $match: { status: 'held' } },
    { $group: { _id: { appDid: '$appDid', environment: '$environment' } } },
  ])
  let released = 0
  for (const { _id: { appDid, environment } } of pairs) {
    const lookup = await endpoints.lookup(appDid, environment)
    // still paused, or the gateway could not say: the re-checks go on. Not configured any more: the attempt fails
    // as it would (the processor holds only for a paused endpoint)
    if (lookup.kind === 'unavailable' || (lookup.kind === 'found' && lookup.endpoint.paused)) continue
    const held = (await models.Delivery.find({ appDid, environment, status: 'held' }, { _id: 1 }).lean()) as { _id: string }[]
    let promoted = 0
    for (const d of held) {
      const job = await queue.getJob(d._id)
      if (!job || (await job.getState()) !== 'delayed') continue
      // picked up or removed meanwhile: its worker decides
      if (await job.promote().then(() => true, () => false)) promoted++
    }
    if (promoted > 0) log.info({ appDid, environment, released: promoted }, 'held deliveries released: their endpoint is no longer paused')
    released += promoted
  }
  return { environments: pairs.length, released }
}
