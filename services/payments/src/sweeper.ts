/** The service's checkout sweep: sweepCheckouts every interval, never two runs at once. */
import type { Logger } from 'pino'
import type { PaymentsDomain } from './domain/context'
import { sweepCheckouts } from './domain/sweep-checkouts'

export const DEFAULT_SWEEP_INTERVAL_MS = 60_000

/** `intervalMs` 0 disables it. `stop` waits for a run in progress. */
export function startCheckoutSweeper(domain: PaymentsDomain, intervalMs: number, logger: Logger): { stop(): Promise<void> } {
  let sweeping: Promise<void> | null = null
  const sweepOnce = () => {
    if (sweeping) return
    sweeping = sweepCheckouts(domain)
      .then((result) => {
        if (result.expired || result.recovered || result.failed) logger.info(result, 'checkout sweep')
      })
      .catch((err: unknown) => logger.error({ err }, 'checkout sweep failed'))
      .finally(() => {
        sweeping = null
      })
  }
  const timer = intervalMs > 0 ? setInterval(sweepOnce, intervalMs) : null
  timer?.unref()
  return {
    async stop() {
      if (timer) clearInterval(timer)
      await sweeping
    },
  }
}
