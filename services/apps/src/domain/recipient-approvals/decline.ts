/** The creator declines an app's request. */
import type { AppsDomain } from '../context'
import { decide } from './decide'
import type { DashboardActor } from './queries'
import { declineTransition } from './state'
import type { RecipientApprovalView } from './views'

/** pending → declined (declined again → unchanged). */
export function declineApproval(d: Pick<AppsDomain, 'models'>, who: DashboardActor, id: string): Promise<RecipientApprovalView> {
  return decide(d, who, id, (_cur, status) => declineTransition(status))
}
