/** The creator unblocks an app. */
import type { AppsDomain } from '../context'
import { decide } from './decide'
import type { DashboardActor } from './queries'
import { unblockTransition } from './state'
import type { RecipientApprovalView } from './views'

/** blocked → declined: the app may ask again (its next request makes the request pending). */
export function unblockApproval(d: Pick<AppsDomain, 'models'>, who: DashboardActor, id: string): Promise<RecipientApprovalView> {
  return decide(d, who, id, (_cur, status) => unblockTransition(status))
}
