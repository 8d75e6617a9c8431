/** The tickets process's sweep: tickets whose `ticket.issued` was never written, every interval, never two runs at once. */
import type { Logger } from 'pino'
import { sweepUnannounced } from './domain/announce'
import type { TicketsDomain } from './domain/context'

export const DEFAULT_TICKETS_SWEEP_MS = 60_000

/** `intervalMs` 0 disables it. `stop` waits for a run in progress. */
export function startTicketsSweeper(domain: TicketsDomain, intervalMs: number, logger: Logger): { stop(): Promise<void>; runOnce(): Promise<void> } {
  let sweeping: Promise<void> | null = null
  const runOnce = () => {
    sweeping ??= sweepUnannounced(domain)
      .then((announced) => {
        if (announced) logger.warn({ announced }, 'tickets sweep: announced tickets whose claim stopped before its event')
      })
      .catch((err: unknown) => logger.error({ err }, 'tickets sweep failed'))
      .finally(() => {
        sweeping = null
      })
    return sweeping
  }
  const timer = intervalMs > 0 ? setInterval(() => void runOnce(), intervalMs) : null
  timer?.unref()
  return {
    runOnce,
    async stop() {
      if (timer) clearInterval(timer)
      await sweeping
    },
  }
}
