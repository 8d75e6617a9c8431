/**
 * The state machine of an approval request.
 *
 * States: pending → approved (accept) | declined (decline); approved → revoked (revoke); any → blocked (block);
 * blocked → declined, or revoked when the block came from an approval or a revoke (unblock); declined → approved
 * (accept). A revoked request is accepted again only once the app asks again: an unblock never brings it back. The app's repeat request with other terms puts the
 * request back to pending (an approval never covers other terms); after a decline or revoke it asks again
 * (pending). A blocked request refuses the app (RecipientAppApprovalBlocked).
 *
 * FerretDB has no transactions and its filtered updates are not atomic, so:
 *  - creation rests on the unique index (upsert; the loser of a race meets the index and continues as an update);
 *  - every move is a conditional update on (id, revision, status): on MongoDB a concurrent move makes it miss and
 *    the loop re-reads; on FerretDB the last write wins, and each write is self-consistent with what it read;
 *  - "approved" counts only while the accepted terms hash equals the current terms hash (effectiveStatus), so
 *    even an interleaving of an accept with a terms change can never leave an approval covering other terms.
 * The functions here only decide: the use cases read, apply the move with that conditional update, and retry.
 */
import { ContractError } from '@svc/errors'
import type { ApprovalStatus, RecipientApprovalDoc } from '../../models'
import { notAllowed } from './errors'
import type { StoredTerms } from './terms'

export type StoredApproval = RecipientApprovalDoc & { createdAt?: Date; updatedAt?: Date }

/** How often a move re-reads after a concurrent change before giving up. */
export const MAX_ATTEMPTS = 30

/**
 * The status a request really has: a stored `approved` counts only while the accepted terms are the current
 * terms (it always is when every write is atomic; this holds the rule without relying on that).
 */
export function effectiveStatus(doc: Pick<StoredApproval, 'status' | 'termsHash' | 'approvedTermsHash'>): ApprovalStatus {
  const status = doc.status as ApprovalStatus
  if (status === 'approved' && doc.approvedTermsHash !== doc.termsHash) return 'pending'
  return status
}

/** A decision's move: the fields to set, or unchanged when the decision was already taken. */
export type Transition = { set: Record<string, unknown> } | { unchanged: true }

/**
 * The app's repeat request (`status` is the effective one): the fields it changes, none when it changes nothing.
 * RecipientAppApprovalBlocked when the creator blocked the app.
 */
export function requestAgain(cur: StoredApproval, status: ApprovalStatus, terms: StoredTerms): Record<string, unknown> {
  if (status === 'blocked') {
    throw new ContractError('RecipientAppApprovalBlocked', 'the creator blocked approval requests from this app')
  }
  // New terms: the creator must approve again; an earlier approval never covers them.
  if (cur.termsHash !== terms.termsHash) return { ...terms, status: 'pending', revision: cur.revision + 1, approvedTermsHash: null, approvedAt: null }
  // The app asks again.
  if (status === 'declined' || status === 'revoked') return { status: 'pending', revision: cur.revision + 1, approvedTermsHash: null, approvedAt: null }
  return {}
}

/**
 * The creator accepts the terms shown to it (termsHash): pending or declined → approved. ApprovalTermsChanged when
 * the terms changed meanwhile; already approved with these terms → unchanged; blocked or revoked → NotAllowed.
 */
export function acceptTransition(cur: StoredApproval, status: ApprovalStatus, termsHash: string): Transition {
  if (status === 'blocked') notAllowed('this app is blocked: unblock it before accepting its terms')
  if (status === 'revoked') notAllowed('this approval was revoked: the app must request it again before it can be accepted')
  if (termsHash !== cur.termsHash) {
    throw new ContractError('ApprovalTermsChanged', 'the app changed its terms since they were shown: review the current terms and accept again')
  }
  if (status === 'approved') return { unchanged: true }
  // its event is due until written (events.ts)
  return { set: { status: 'approved', approvedTermsHash: cur.termsHash, approvedAt: new Date(), grantedDue: cur.revision, eventsDue: true } }
}

/** pending → declined (declined again → unchanged). */
export function declineTransition(status: ApprovalStatus): Transition {
  if (status === 'declined') return { unchanged: true }
  if (status === 'approved') notAllowed('an approved request is not declined: revoke the approval instead')
  if (status !== 'pending') notAllowed(`a ${status} request cannot be declined`)
  return { set: { status: 'declined' } }
}

/** The end of an approval (revoke, or block of an approved request): a new revision remembering the one it ended. */
function endApproval(cur: StoredApproval, status: 'revoked' | 'blocked'): Record<string, unknown> {
  return {
    status,
    revision: cur.revision + 1,
    approvedTermsHash: null,
    approvedAt: null,
    revokedRevision: cur.revision,
    revokedAt: new Date(),
    revokedStatus: status,
    // its event is due until written (events.ts)
    revokedDue: cur.revision,
    eventsDue: true,
  }
}

/** approved → revoked (revoked again → unchanged). */
export function revokeTransition(cur: StoredApproval, status: ApprovalStatus): Transition {
  if (status === 'revoked') return { unchanged: true }
  if (status !== 'approved') notAllowed(`only an approved request can be revoked; this one is ${status}`)
  return { set: endApproval(cur, 'revoked') }
}

/** any → blocked, ending an approval (blocked again → unchanged). */
export function blockTransition(cur: StoredApproval, status: ApprovalStatus): Transition {
  if (status === 'blocked') return { unchanged: true }
  if (status === 'approved') return { set: endApproval(cur, 'blocked') }
  return { set: { status: 'blocked' } }
}

/**
 * blocked → declined, or → revoked when the block ended an approval or came after a revoke (so the creator cannot
 * accept the app's old terms again without the app asking: accept refuses a revoked request). Either way the app may
 * ask again (its next request makes the request pending). Already declined or revoked → unchanged (a form sent twice).
 */
export function unblockTransition(cur: StoredApproval, status: ApprovalStatus): Transition {
  if (status === 'declined' || status === 'revoked') return { unchanged: true }
  if (status !== 'blocked') notAllowed(`only a blocked request can be unblocked; this one is ${status}`)
  // the request's last new revision ended an approval (the block itself, or a revoke before it): no new request since
  return { set: { status: endedAnApproval(cur) ? 'revoked' : 'declined' } }
}

/** The request's last move ended an approval (revoke, or block of an approved request): the revoked event is due. */
export function endedAnApproval(doc: StoredApproval): boolean {
  return doc.revokedRevision !== null && doc.revokedRevision !== undefined && doc.revokedRevision === doc.revision - 1
}
