/** The service's checkout sweep: sweepCheckouts every interval, never two runs at once. */
import type { Logger } from 'pino'
import { startSweep, type Sweep } from '@svc/subgraph-server'
import type { PaymentsDomain } from './domain/context'
import { sweepCheckouts, type SweepCursor } from './domain/sweep-checkouts'

export const DEFAULT_SWEEP_INTERVAL_MS = 60_000

/** `intervalMs` 0 disables it. `stop` waits for a run in progress. */
export function startCheckoutSweeper(domain: PaymentsDomain, intervalMs: number, logger: Logger): Sweep {
  let after: SweepCursor = {}
  return startSweep(
    'checkout sweep',
    async () => {
      const { resumeAfter, ...result } = await sweepCheckouts(domain, { after })
      after = resumeAfter
      if (result.expired || result.recovered || result.failed) logger.info(result, 'checkout sweep')
    },
    intervalMs,
    logger,
  )
}
