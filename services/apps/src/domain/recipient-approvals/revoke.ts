/** The creator revokes an approval. */
import type { AppsDomain } from '../context'
import { decide } from './decide'
import { writeRevokedEvent } from './events'
import type { DashboardActor } from './queries'
import { endedAnApproval, revokeTransition } from './state'
import type { RecipientApprovalView } from './views'

/** approved → revoked, and the app.authorization.revoked event (revoked again → unchanged: its event written if still due). */
export function revokeApproval(d: Pick<AppsDomain, 'models'>, who: DashboardActor, id: string): Promise<RecipientApprovalView> {
  return decide(d, who, id, revokeTransition, async (doc, from) => {
    if (doc.status !== 'revoked' || !endedAnApproval(doc)) return doc
    return from !== null || doc.revokedDue === doc.revokedRevision ? writeRevokedEvent(d, doc) : doc
  })
}
