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
 * these terms → unchanged (the event written again if it was lost); blocked or revoked → NotAllowed.
 */
export function acceptApproval(d: Pick<AppsDomain, 'models'>, who: DashboardActor, id: string, termsHash: string): Promise<RecipientApprovalView> {
  return decide(
    d,
    who,
    id,
    (cur, status) => acceptTransition(cur, status, termsHash),
    async (doc) => (effectiveStatus(doc) === 'approved' ? writeGrantedEvent(d, doc) : doc),
  )
}
