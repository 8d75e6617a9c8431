/** The creator accepts an app's terms. */
import type { AppsDomain } from '../context'
import { decide } from './decide'
import { writeGrantedEvent } from './events'
import type { DashboardActor } from './queries'
import { acceptTransition, effectiveStatus } from './state'
import type { RecipientApprovalView } from './views'

/**
 * The creator accepts the terms shown to it (termsHash). From pending or declined → approved, and the
 * app.authorization.granted event. ApprovalTermsChanged when the terms changed meanwhile; already approved with
 * these terms → unchanged (the event written if it is still due, its write lost; never again once written: a form
 * posted again after the event left the outbox would send it twice); blocked or revoked → NotAllowed.
 */
export function acceptApproval(d: Pick<AppsDomain, 'models'>, who: DashboardActor, id: string, termsHash: string): Promise<RecipientApprovalView> {
  return decide(
    d,
    who,
    id,
    (cur, status) => acceptTransition(cur, status, termsHash),
    async (doc, from) => (effectiveStatus(doc) === 'approved' && (from !== null || doc.grantedDue === doc.revision) ? writeGrantedEvent(d, doc) : doc),
  )
}
