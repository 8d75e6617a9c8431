/**
 * Work that concurrent requests of one process share. While a run for a key is in flight, a request that asks for the
 * same key joins it instead of starting its own: a crowd of buyers on one tier reads it a few times, not once per
 * buyer; reads of one processing checkout finish it once. Nothing is cached: a run that has answered is forgotten,
 * so a request never sees a state older than a run that was under way when it came.
 */
const inFlight = new WeakMap<object, Map<string, Promise<unknown>>>()

/**
 * `run()`'s answer, shared with every caller asking for `key` of the same `source` while it runs. `source`: what the
 * run works on (a domain, a gateway client), so two services in one process never share.
 */
export function sharedRun<T>(source: object, key: string, run: () => Promise<T>): Promise<T> {
  let runs = inFlight.get(source)
  if (!runs) inFlight.set(source, (runs = new Map()))
  const running = runs.get(key) as Promise<T> | undefined
  if (running) return running
  const started = run().finally(() => runs.delete(key))
  runs.set(key, started)
  return started
}
