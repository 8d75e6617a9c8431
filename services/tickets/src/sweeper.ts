/**
 * The tickets process's sweep, every interval, never two runs at once: free claims that stopped between keeping their
 * units and inserting their ticket (domain/stopped-claims.ts), then tickets whose `ticket.issued` was never written,
 * then voids cut off before their seat returned (domain/void-ticket.ts), then the seat maps due for a rebuild from
 * their units (domain/seat-map.ts).
 */
import type { Logger } from 'pino'
import { startSweep, type Sweep } from '@svc/subgraph-server'
import { sweepUnannounced } from './domain/announce'
import { reconcileSeatMaps } from './domain/capacity'
import type { TicketsDomain } from './domain/context'
import { sweepStoppedClaims } from './domain/stopped-claims'
import { sweepPendingVoids } from './domain/void-ticket'

async function sweep(domain: TicketsDomain, logger: Logger): Promise<void> {
  const stopped = await sweepStoppedClaims(domain)
  if (stopped.issued || stopped.released) logger.warn(stopped, 'tickets sweep: finished free claims that stopped between keeping their seat and issuing their ticket')
  const announced = await sweepUnannounced(domain)
  if (announced) logger.warn({ announced }, 'tickets sweep: announced tickets whose claim stopped before its event')
  const voids = await sweepPendingVoids(domain)
  if (voids) logger.warn({ voids }, 'tickets sweep: finished voids cut off before their seat returned')
  const rebuilt = await reconcileSeatMaps(domain)
  if (rebuilt) logger.info({ rebuilt }, 'tickets sweep: seat maps rebuilt from their units')
}

export const DEFAULT_TICKETS_SWEEP_MS = 60_000

/** `intervalMs` 0 disables it. `stop` waits for a run in progress. */
export function startTicketsSweeper(domain: TicketsDomain, intervalMs: number, logger: Logger): Sweep {
  return startSweep('tickets sweep', () => sweep(domain, logger), intervalMs, logger)
}
