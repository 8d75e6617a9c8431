/**
 * The tickets process's sweep, every interval, never two runs at once: free claims that stopped between keeping their
 * units and inserting their ticket (domain/stopped-claims.ts), then tickets whose `ticket.issued` was never written,
 * then voids cut off after their decision (domain/void-ticket.ts), then the seat maps due for a rebuild from
 * their units (domain/seat-map.ts). A step that fails is logged and tried again next run; the others still run.
 */
import type { Logger } from 'pino'
import { startSweep, type Sweep } from '@svc/subgraph-server'
import { sweepUnannounced } from './domain/announce'
import { reconcileSeatMaps } from './domain/capacity'
import type { TicketsDomain } from './domain/context'
import { sweepStoppedClaims } from './domain/stopped-claims'
import { sweepPendingVoids } from './domain/void-ticket'

async function sweep(domain: TicketsDomain, logger: Logger): Promise<void> {
  // each step runs whatever the one before it did: a step that keeps failing holds up no other
  await step(logger, 'stopped claims', async () => {
    const stopped = await sweepStoppedClaims(domain)
    if (stopped.issued || stopped.released) logger.warn(stopped, 'tickets sweep: finished free claims that stopped between keeping their seat and issuing their ticket')
  })
  await step(logger, 'unannounced tickets', async () => {
    const announced = await sweepUnannounced(domain)
    if (announced) logger.warn({ announced }, 'tickets sweep: announced tickets whose claim stopped before its event')
  })
  await step(logger, 'pending voids', async () => {
    const voids = await sweepPendingVoids(domain)
    if (voids) logger.warn({ voids }, 'tickets sweep: finished voids cut off after their decision')
  })
  await step(logger, 'seat maps', async () => {
    const rebuilt = await reconcileSeatMaps(domain)
    if (rebuilt) logger.info({ rebuilt }, 'tickets sweep: seat maps rebuilt from their units')
  })
}

async function step(logger: Logger, name: string, run: () => Promise<void>): Promise<void> {
  await run().catch((err: unknown) => logger.error({ err, step: name }, 'tickets sweep: a step failed; the next run tries it again'))
}

export const DEFAULT_TICKETS_SWEEP_MS = 60_000

/** `intervalMs` 0 disables it. `stop` waits for a run in progress. */
export function startTicketsSweeper(domain: TicketsDomain, intervalMs: number, logger: Logger): Sweep {
  return startSweep('tickets sweep', () => sweep(domain, logger), intervalMs, logger)
}
