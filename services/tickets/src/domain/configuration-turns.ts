/**
 * One configuration of an event at a time. FerretDB applies no update atomically against a concurrent one
 * (docs/decisions.md), so two configureTicketTiers calls of one event that overlapped would each decide on what the
 * other was changing: a range written back from a stale read could fall below seats already sold, and seats blocked
 * outside it would sell past the published capacity. So each call takes the event's next turn, an insert-only
 * document `<eventKey>#<n>`, and may take it only once turn n-1 has ended (or lapsed, its holder having died). Two
 * calls wanting the same turn meet at the unique `_id`; a turn is written after its insert only by its holder, when
 * it ends. Nothing here rests on a filtered update.
 */
import { ContractError } from '@svc/errors'
import { isDuplicateKeyError } from '../models'
import type { TicketsDomain } from './context'
import { sleep } from './duplicates'

/** A turn whose holder has not ended it in this time is taken as abandoned (a configuration takes well under a second). */
export const TURN_SECONDS = 120
/** How long a call waits for the turn before it answers ServiceUnavailable (retryable). */
export const TURN_WAIT_MS = 10_000
const TURN_POLL_MS = 25

/** Runs `fn` in the event's next turn: no other configuration of the event runs meanwhile. */
export async function inConfigurationTurn<T>(d: TicketsDomain, eventKey: string, fn: () => Promise<T>): Promise<T> {
  const turn = await takeTurn(d, eventKey)
  try {
    return await fn()
  } finally {
    await d.models.ConfigurationTurn.updateOne({ _id: turn.id }, { $set: { endedAt: new Date() } }).catch((err: unknown) =>
      d.logger?.warn({ err, eventKey }, 'configuration turn not ended: the next configuration of this event waits for it to lapse'),
    )
  }
}

// turns are timed by the machine's clock, not the domain's (a test's clock may stand still)
async function takeTurn(d: TicketsDomain, eventKey: string): Promise<{ id: string }> {
  const giveUpAt = Date.now() + TURN_WAIT_MS
  for (;;) {
    const last = await d.models.ConfigurationTurn.findOne({ eventKey }).sort({ n: -1 }).lean()
    if (!last || last.endedAt || last.expiresAt.getTime() <= Date.now()) {
      const n = (last?.n ?? 0) + 1
      const id = `${eventKey}#${n}`
      try {
        await d.models.ConfigurationTurn.create({ _id: id, eventKey, n, expiresAt: new Date(Date.now() + TURN_SECONDS * 1000) })
        // the turns before the last one are history
        if (n > 2) await d.models.ConfigurationTurn.deleteMany({ eventKey, n: { $lt: n - 1 } }).catch(() => undefined)
        return { id }
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err
        continue // another call took this turn: wait for it
      }
    }
    if (Date.now() >= giveUpAt) throw new ContractError('ServiceUnavailable', 'another configuration of this event is in progress; retry')
    await sleep(TURN_POLL_MS)
  }
}
