/** The creator blocks an app's requests. */
import type { AppsDomain } from '../context'
import { decide } from './decide'
import { writeRevokedEvent } from './events'
import type { DashboardActor } from './queries'
import { blockTransition, endedAnApproval } from './state'
import type { RecipientApprovalView } from './views'

/** any → blocked; an approval it ends gets the app.authorization.revoked event (blocked again → unchanged). */
export function blockApproval(d: Pick<AppsDomain, 'models'>, who: DashboardActor, id: string): Promise<RecipientApprovalView> {
  return decide(d, who, id, blockTransition, async (doc, from) => {
    if (doc.status !== 'blocked') return doc
    // a fresh block writes the event only if it ended an approval; a repeated block writes one still due (lost)
    const due = from === null ? endedAnApproval(doc) && doc.revokedDue === doc.revokedRevision : from === 'approved'
    return due ? writeRevokedEvent(d, doc) : doc
  })
}
