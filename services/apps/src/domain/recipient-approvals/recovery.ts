/**
 * A read finishes a move left half done. A move stores the request's state, then writes its event; one cut off in
 * between (the database away, the process stopped: the creator saw an error page) left the event unwritten, and the
 * dashboard then offers no repeat of the same move that would write it. So the app's read of its request and the
 * creator's page of it write the events still due (grantedDue, revokedDue: events.ts), in the request's turn.
 */
import type { AppsDomain } from '../context'
import { dropDue, eventsMissing, writeGrantedEvent, writeRevokedEvent } from './events'
import { effectiveStatus, type StoredApproval } from './state'
import { inApprovalTurn } from './turns'

export async function withEventsWritten(d: Pick<AppsDomain, 'models' | 'logger'>, doc: StoredApproval): Promise<StoredApproval> {
  if (!eventsMissing(doc)) return doc
  return inApprovalTurn(d, doc, async () => {
    let cur = (await d.models.RecipientApproval.findOne({ id: doc.id }).lean()) ?? doc
    if (typeof cur.grantedDue === 'number') {
      // the grant of that revision, as long as the request still stands approved at it
      cur = effectiveStatus(cur) === 'approved' && cur.revision === cur.grantedDue ? await writeGrantedEvent(d, cur) : await dropDue(d, cur, 'grantedDue')
    }
    if (typeof cur.revokedDue === 'number') {
      cur = cur.revokedRevision === cur.revokedDue ? await writeRevokedEvent(d, cur) : await dropDue(d, cur, 'revokedDue')
    }
    d.logger?.warn({ approvalId: cur.id }, 'approval: the event of a move cut off before it was written is written now')
    return cur
  })
}

/** A move's own write of its event comes within moments; a request still owing one after this is left to the sweep. */
export const DUE_EVENT_GRACE_MS = 30_000
/** How many requests one sweep run finishes; the next run takes the rest. */
const DUE_EVENTS_PER_RUN = 500

/**
 * The apps process's sweep (every minute): the requests whose move was cut off before its event was written, that no
 * read has finished since (the app that waits for the event reads nothing; the dashboard's list does not finish
 * them). Answers how many it finished.
 */
export async function writeDueApprovalEvents(d: Pick<AppsDomain, 'models' | 'logger'>, now: Date = new Date()): Promise<number> {
  // by the equality FerretDB pushes down (a range or an $or here read every request each minute); the requests owing
  // an event are the moves of the last moments and the few cut off, so their age is checked here
  const cutoff = now.getTime() - DUE_EVENT_GRACE_MS
  const due = ((await d.models.RecipientApproval.find({ eventsDue: true }).lean()) as StoredApproval[])
    .filter((doc) => (doc.updatedAt ?? doc.createdAt ?? new Date(0)).getTime() < cutoff)
    .slice(0, DUE_EVENTS_PER_RUN)
  let finished = 0
  for (const doc of due) {
    try {
      await withEventsWritten(d, doc)
      finished++
    } catch (err) {
      d.logger?.warn({ approvalId: doc.id, err }, 'approval: its due event could not be written yet; the next sweep tries again')
    }
  }
  return finished
}
