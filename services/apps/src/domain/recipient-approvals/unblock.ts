/** The creator unblocks an app. */
import type { AppsDomain } from '../context'
import { decide } from './decide'
import type { DashboardActor } from './queries'
import { unblockTransition } from './state'
import type { RecipientApprovalView } from './views'

/** blocked → declined, or revoked after an approval or a revoke (state.ts): the app may ask again. */
export function unblockApproval(d: Pick<AppsDomain, 'models'>, who: DashboardActor, id: string): Promise<RecipientApprovalView> {
  return decide(d, who, id, unblockTransition)
}
