/** A domain's periodic sweep (the payments checkout sweep, the tickets sweep): a timer in the process, never two runs at once. */
import type { Logger } from 'pino'

export interface Sweep {
  /** starts a run now, or joins the one under way */
  runOnce(): Promise<void>
  /** stops the timer and waits for a run in progress */
  stop(): Promise<void>
}

/** Runs `run` every `intervalMs` (0: only when asked, by runOnce); a failed run is logged and the next period runs again. */
export function startSweep(name: string, run: () => Promise<void>, intervalMs: number, logger: Pick<Logger, 'error'>): Sweep {
  let running: Promise<void> | null = null
  const runOnce = () =>
    (running ??= run()
      .catch((err: unknown) => logger.error({ err }, `${name} failed`))
      .finally(() => {
        running = null
      }))
  const timer = intervalMs > 0 ? setInterval(() => void runOnce(), intervalMs) : null
  timer?.unref()
  return {
    runOnce,
    async stop() {
      if (timer) clearInterval(timer)
      await running
    },
  }
}

/**
 * A retention prune: `prune` deletes what is past its retention and answers how many went. It runs every
 * `intervalMs` and once at start, so a process restarted more often than that still prunes; a run that deleted
 * something logs `deletedMessage` with the count.
 */
export function startPrune(
  name: string,
  prune: () => Promise<number>,
  intervalMs: number,
  logger: Pick<Logger, 'info' | 'error'>,
  deletedMessage: string,
): Sweep {
  const sweep = startSweep(
    name,
    async () => {
      const deleted = await prune()
      if (deleted > 0) logger.info({ deleted }, deletedMessage)
    },
    intervalMs,
    logger,
  )
  void sweep.runOnce()
  return sweep
}

/**
 * A sweep's items, each on its own: `finish` runs on every item in turn, and one that fails holds up none after it.
 * Answers how many finished; when any failed, throws once all ran (an AggregateError saying how many), so the sweep
 * logs it and tries those again next run.
 */
export async function finishEach<T>(what: string, items: Iterable<T>, finish: (item: T) => Promise<void>): Promise<number> {
  const failed: unknown[] = []
  let finished = 0
  for (const item of items) {
    try {
      await finish(item)
      finished++
    } catch (err) {
      failed.push(err)
    }
  }
  if (failed.length > 0) throw new AggregateError(failed, `${failed.length} of ${finished + failed.length} ${what} failed (${finished} finished)`)
  return finished
}
