/**
 * In-process notice of outbox writes: `writeOutboxEvent` announces every event it inserted, so a relay in the same
 * process relays it at once instead of at its next poll. Writes from other processes (operator commands, another
 * replica) are found by the relay's polling.
 */
import { EventEmitter } from 'node:events'
import type { Connection } from 'mongoose'

/** Emits `written` with the outbox's namespace (see outboxNamespace), the event id and the event after each successful insert. */
export const outboxWrites = new EventEmitter()
// every relay in the process listens (tests run several)
outboxWrites.setMaxListeners(0)

export const OUTBOX_WRITTEN = 'written'

/**
 * The outbox collection a model writes to, whichever connection it uses: server, database and collection. Two
 * models of the same outbox (the service's and an operator command's in the same process) have the same namespace.
 */
export function outboxNamespace(model: { db: Connection; collection: { collectionName: string } }): string {
  return `${model.db.host}:${model.db.port}/${model.db.name}.${model.collection.collectionName}`
}
