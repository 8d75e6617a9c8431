/**
 * The outbox events of approvals (docs/events.md). Events are keyed by the fact
 * (`app.authorization.granted:<id>:<revision>`), written after the state change, which notes them due; a repeat of
 * the same move, or the next read of the request (recovery.ts), writes one still due, so they are never lost nor
 * duplicated.
 */
import { writeOutboxEvent } from '@svc/outbox'
import type { Environment } from '@svc/vocabulary'
import type { AppsDomain } from '../context'
import type { StoredApproval } from './state'
import { publicRecordsOf } from './views'

/**
 * Concurrent identical moves (two accepts) may each have stored their own timestamp, while only one event was
 * written: every racer reads the event back and stores its timestamp, so the request and the event agree.
 */
async function settleTimestamp(d: Pick<AppsDomain, 'models'>, doc: StoredApproval, eventId: string, field: 'approvedAt' | 'revokedAt'): Promise<StoredApproval> {
  const event = await d.models.Outbox.findById(eventId).lean()
  const stamped = event?.data?.[field]
  if (typeof stamped !== 'string' || stamped === doc[field]?.toISOString()) return doc
  const at = new Date(stamped)
  const fixed = await d.models.RecipientApproval.findOneAndUpdate(
    { id: doc.id, revision: doc.revision, status: doc.status },
    { $set: { [field]: at } },
    { returnDocument: 'after', lean: true, timestamps: false },
  )
  return fixed ?? { ...doc, [field]: at }
}

/** app.authorization.granted for the approval of one revision (written once, also by concurrent accepts). */
export async function writeGrantedEvent(d: Pick<AppsDomain, 'models' | 'requestId'>, doc: StoredApproval): Promise<StoredApproval> {
  const approvedAt = doc.approvedAt ?? new Date()
  const eventId = await writeOutboxEvent(d.models.Outbox, {
    type: 'app.authorization.granted',
    key: `app.authorization.granted:${doc.id}:${doc.revision}`,
    appDid: doc.appDid,
    environment: doc.environment as Environment,
    occurredAt: approvedAt,
    requestId: d.requestId,
    data: {
      approvalId: doc.id,
      recipientDid: doc.recipientDid,
      paymentTypes: [...doc.paymentTypes],
      feeShareBps: doc.feeShareBps,
      publicRecords: publicRecordsOf(doc),
      approvedAt: approvedAt.toISOString(),
    },
  })
  return written(d, await settleTimestamp(d, doc, eventId, 'approvedAt'), 'grantedDue', doc.revision)
}

/** A request ended before `revokedStatus` was stored says it by its status, until a later move changed that. */
function revokedStatusOf(doc: StoredApproval): 'revoked' | 'blocked' {
  const status = doc.revokedStatus ?? doc.status
  return status === 'blocked' ? 'blocked' : 'revoked'
}

/** app.authorization.revoked for the approval of revision `revokedRevision`, ended by the creator's revoke or block. */
export async function writeRevokedEvent(d: Pick<AppsDomain, 'models' | 'requestId'>, doc: StoredApproval): Promise<StoredApproval> {
  if (doc.revokedRevision === null || doc.revokedRevision === undefined) return doc
  const revokedAt = doc.revokedAt ?? new Date()
  const eventId = await writeOutboxEvent(d.models.Outbox, {
    type: 'app.authorization.revoked',
    key: `app.authorization.revoked:${doc.id}:${doc.revokedRevision}`,
    appDid: doc.appDid,
    environment: doc.environment as Environment,
    occurredAt: revokedAt,
    requestId: d.requestId,
    data: {
      approvalId: doc.id,
      recipientDid: doc.recipientDid,
      // how it ended, as the move stored it: a request asked again since (pending, or approved anew) is not that
      status: revokedStatusOf(doc),
      revokedAt: revokedAt.toISOString(),
    },
  })
  return written(d, await settleTimestamp(d, doc, eventId, 'revokedAt'), 'revokedDue', doc.revokedRevision)
}

/** The move's event is written: it is due no more (in the move's turn: no other write of the request runs). */
async function written(d: Pick<AppsDomain, 'models'>, doc: StoredApproval, field: 'grantedDue' | 'revokedDue', revision: number): Promise<StoredApproval> {
  return doc[field] === revision ? dropDue(d, doc, field) : doc
}

/**
 * Whether a move's event write was lost: the move stored its state with the event due (grantedDue, revokedDue), then
 * the database went away or the process stopped before the event was written.
 */
export function eventsMissing(doc: StoredApproval): boolean {
  return typeof doc.grantedDue === 'number' || typeof doc.revokedDue === 'number'
}

/** A due event noted as due no more: written, or one the request has moved past (asked again with new terms since). */
export async function dropDue(d: Pick<AppsDomain, 'models'>, doc: StoredApproval, field: 'grantedDue' | 'revokedDue'): Promise<StoredApproval> {
  // the sweep's mark goes with the last event due
  const stillDue = typeof doc[field === 'grantedDue' ? 'revokedDue' : 'grantedDue'] === 'number'
  await d.models.RecipientApproval.updateOne({ id: doc.id }, { $unset: { [field]: 1, ...(stillDue ? {} : { eventsDue: 1 }) } }, { timestamps: false })
  const { [field]: _due, ...rest } = doc
  if (stillDue) return rest as StoredApproval
  const { eventsDue: _mark, ...done } = rest as StoredApproval
  return done as StoredApproval
}
