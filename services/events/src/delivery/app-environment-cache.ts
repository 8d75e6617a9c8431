/**
 * What the delivery worker reads about an app environment before an attempt, kept for `ttlMs`
 * (DELIVERY_APP_CACHE_MS, docs/events.md "Throughput"): its endpoint (a lookup in the apps subgraph through the
 * gateway) and its signing secrets (a read of the events database). Attempts for the same app environment share one
 * read, also while it runs; a lookup that failed is not kept. A change (pause, URL, channel, rotation) reaches
 * attempts within `ttlMs`; 0 reads before every attempt.
 */
import { LRUCache } from 'lru-cache'
import type { Environment } from '@svc/vocabulary'
import type { EndpointClient, EndpointLookup } from './endpoint'

/** app environments kept per worker process (the least recently used go first) */
const MAX_ENTRIES = 10_000

/** `load(key)` at most once per key per `ttlMs`, concurrent callers sharing it; values `keep` refuses are not kept. */
function sharedRead<V extends object>(ttlMs: number, keep: (value: V) => boolean = () => true) {
  const kept = ttlMs > 0 ? new LRUCache<string, V>({ max: MAX_ENTRIES, ttl: ttlMs }) : null
  const running = new Map<string, Promise<V>>()
  return (key: string, load: () => Promise<V>): Promise<V> => {
    if (!kept) return load()
    const hit = kept.get(key)
    if (hit) return Promise.resolve(hit)
    let read = running.get(key)
    if (!read) {
      read = load()
        .then((value) => {
          if (keep(value)) kept.set(key, value)
          return value
        })
        .finally(() => running.delete(key))
      running.set(key, read)
    }
    return read
  }
}

export function cachedEndpoints(client: EndpointClient, ttlMs: number): EndpointClient {
  const read = sharedRead<EndpointLookup>(ttlMs, (lookup) => lookup.kind !== 'unavailable')
  return {
    lookup: (appDid, environment, requestId) => read(`${appDid} ${environment}`, () => client.lookup(appDid, environment, requestId)),
    disable: (appDid, environment, reason, url, requestId) => client.disable(appDid, environment, reason, url, requestId),
    close: () => client.close(),
  }
}

export type SigningSecretsReader = (appDid: string, environment: Environment) => Promise<string[]>

export function cachedSigningSecrets(load: SigningSecretsReader, ttlMs: number): SigningSecretsReader {
  const read = sharedRead<string[]>(ttlMs)
  return (appDid, environment) => read(`${appDid} ${environment}`, () => load(appDid, environment))
}
