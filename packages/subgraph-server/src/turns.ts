/**
 * Turns: one writer at a time on a thing (an event's tiers, an approval request), where FerretDB would lose one of
 * two overlapping writes (it applies an update by reading the document and writing it whole back, docs/decisions.md)
 * and the writers decide on what they read. Each writer takes the thing's next turn, an insert-only document
 * `<key>#<n>`, and may take it only once turn n-1 has ended (or lapsed, its holder having died). Two writers wanting
 * the same turn meet at the unique `_id`; a turn is written after its insert only by its holder, when it ends.
 * Nothing here rests on a filtered update, so it holds on FerretDB as on MongoDB.
 */
import { Schema, type Connection, type InferSchemaType, type Model } from 'mongoose'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Logger } from 'pino'
import { ContractError } from '@svc/errors'
import { isDuplicateKeyError } from './duplicate-key'

const turnSchema = new Schema(
  {
    /** `<key>#<n>` */
    _id: { type: String, required: true },
    key: { type: String, required: true },
    n: { type: Number, required: true },
    /** a holder that died: the next writer may take the turn after this */
    expiresAt: { type: Date, required: true },
    endedAt: { type: Date, default: null },
  },
  { versionKey: false },
)
turnSchema.index({ key: 1, n: -1 })

export type TurnDoc = InferSchemaType<typeof turnSchema>
export type TurnModel = Model<TurnDoc>

/** The turns of one kind of thing, in their own collection. */
export async function createTurnModel(conn: Connection, name: string, collection: string): Promise<TurnModel> {
  const model = conn.model<TurnDoc>(name, turnSchema.clone().set('collection', collection))
  await model.init()
  return model
}

export interface TurnOptions {
  /** a turn whose holder has not ended it in this time is taken as abandoned (default 120 s) */
  turnSeconds?: number
  /** how long a writer waits for its turn before it answers ServiceUnavailable, retryable (default 10 s) */
  waitMs?: number
  /** what a writer that gave up waiting is told */
  busyMessage?: string
  logger?: Logger
}

const POLL_MS = 25

/** The turn a writer holds. */
export interface Turn {
  /**
   * Throws ServiceUnavailable (retryable) once the turn is near its lapse, within a quarter of its length (at most
   * 30 s): the next writer may take the turn then, so a write from here on could land after its writes, from reads
   * older than them. A writer that may run long asks before each write.
   */
  assertHeld(): void
}

/** Runs `fn` in `key`'s next turn: no other writer of `key` runs meanwhile. */
export async function inTurn<T>(model: TurnModel, key: string, fn: (turn: Turn) => Promise<T>, opts: TurnOptions = {}): Promise<T> {
  const { id, writesUntil } = await takeTurn(model, key, opts)
  const turn: Turn = {
    assertHeld() {
      if (Date.now() >= writesUntil) throw new ContractError('ServiceUnavailable', 'this change ran too long to finish in its turn and stopped; retry')
    },
  }
  try {
    return await fn(turn)
  } finally {
    await model.updateOne({ _id: id }, { $set: { endedAt: new Date() } }).catch((err: unknown) =>
      opts.logger?.warn({ err, key }, 'turn not ended: the next writer waits for it to lapse'),
    )
  }
}

// turns are timed by the machine's clock, not a domain's (a test's clock may stand still)
async function takeTurn(model: TurnModel, key: string, opts: TurnOptions): Promise<{ id: string; writesUntil: number }> {
  const turnMs = (opts.turnSeconds ?? 120) * 1000
  const giveUpAt = Date.now() + (opts.waitMs ?? 10_000)
  for (;;) {
    const last = await model.findOne({ key }).sort({ n: -1 }).lean()
    if (!last || last.endedAt || last.expiresAt.getTime() <= Date.now()) {
      const n = (last?.n ?? 0) + 1
      const id = `${key}#${n}`
      const expiresAt = new Date(Date.now() + turnMs)
      try {
        await model.create({ _id: id, key, n, expiresAt })
        // the turns before the last one are history, once they are old: a writer that read turn k as the last and
        // stalled must still meet turn k+1 at its insert, not find it deleted and take it a second time
        if (n > 2) await model.deleteMany({ key, n: { $lt: n - 1 }, expiresAt: { $lt: new Date(Date.now() - turnMs) } }).catch(() => undefined)
        // its holder writes until the last quarter of the turn (at most 30 s before it lapses): Turn.assertHeld
        return { id, writesUntil: expiresAt.getTime() - Math.min(30_000, turnMs / 4) }
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err
        continue // another writer took this turn: wait for it
      }
    }
    if (Date.now() >= giveUpAt) throw new ContractError('ServiceUnavailable', opts.busyMessage ?? 'another change of this is in progress; retry')
    await sleep(POLL_MS)
  }
}
