/**
 * Reads that concurrent requests share. While a read of a key is in flight in this process, a request that asks for
 * the same key joins it instead of sending its own: a crowd of buyers on one tier reads the tier, its event and its
 * taken seats a few times, not once per buyer (docs/tickets.md, "Capacity"). Nothing is cached: a read that has
 * answered is forgotten, so a request never sees a state older than a read that was under way when it came.
 *
 * Only what reads choose from goes through here. What decides is a write under a unique index (capacity.ts), so a
 * shared answer that is a few milliseconds old can make a request try a seat that was just taken (it tries another)
 * or miss one freed in those milliseconds, never take a seat twice.
 */
const inFlight = new WeakMap<object, Map<string, Promise<unknown>>>()

/**
 * `read()`'s answer, shared with every request asking for `key` of the same source while it runs. `source`: what is
 * read (the domain's models, the gateway client), so two services in one process never share.
 */
export function sharedRead<T>(source: object, key: string, read: () => Promise<T>): Promise<T> {
  let reads = inFlight.get(source)
  if (!reads) inFlight.set(source, (reads = new Map()))
  const running = reads.get(key) as Promise<T> | undefined
  if (running) return running
  const started = read().finally(() => reads.delete(key))
  reads.set(key, started)
  return started
}
