/** How every creator decision is applied (state.ts decides, this writes). */
import type { ApprovalStatus } from '../../models'
import type { AppsDomain } from '../context'
import { findAddressedApproval, type DashboardActor } from './queries'
import { effectiveStatus, MAX_ATTEMPTS, type StoredApproval, type Transition } from './state'
import { inApprovalTurn } from './turns'
import { toApprovalView, type RecipientApprovalView } from './views'

export type Decision = (cur: StoredApproval, status: ApprovalStatus) => Transition
/** `from`: the status the decision moved the request from; null when it was already taken (nothing written) */
export type AfterDecision = (doc: StoredApproval, from: ApprovalStatus | null) => Promise<StoredApproval>

/**
 * One creator decision, in the request's turn (turns.ts: the app's repeated request takes the same turn): read,
 * decide, conditional update on (id, revision, status, terms), retry on a concurrent change; then the event step, also
 * when the decision was already taken (the recovery of a lost event write).
 */
export async function decide(
  d: Pick<AppsDomain, 'models' | 'logger'>,
  who: DashboardActor,
  id: string,
  decision: Decision,
  after: AfterDecision = async (doc) => doc,
): Promise<RecipientApprovalView> {
  // the request's key never changes: read once to find the turn (and to refuse a request not the creator's at once)
  const addressed = await findAddressedApproval(d, who, id)
  return inApprovalTurn(d, addressed, async () => {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const cur = await findAddressedApproval(d, who, id)
      const from = effectiveStatus(cur)
      const outcome = decision(cur, from)
      if ('unchanged' in outcome) return toApprovalView(await after(cur, null))
      const doc = await d.models.RecipientApproval.findOneAndUpdate(
        { id: cur.id, revision: cur.revision, status: cur.status, termsHash: cur.termsHash },
        { $set: outcome.set },
        { returnDocument: 'after', lean: true },
      )
      if (doc) return toApprovalView(await after(doc, from))
    }
    throw new Error('approval decision: too many concurrent changes')
  })
}
