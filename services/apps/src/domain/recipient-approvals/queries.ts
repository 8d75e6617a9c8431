/** Reads of approval requests: the app's request to one recipient, and the requests addressed to a signed-in creator. */
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'
import type { AppsDomain } from '../context'
import type { StoredApproval } from './state'
import { withEventsWritten } from './recovery'
import { toApprovalView, type RecipientApprovalView } from './views'

/** dashboardApprovals returns at most this many requests, newest first */
export const DASHBOARD_APPROVALS_LIMIT = 200

/** The identity of the signed-in creator (dashboard principal). */
export interface DashboardActor {
  actorDid: string
  environment: Environment
}

/** The app's request to one recipient in one environment, or null (read-only; never creates). */
export async function findAppApproval(d: Pick<AppsDomain, 'models' | 'logger'>, appDid: string, environment: Environment, recipientDid: string): Promise<RecipientApprovalView | null> {
  if (typeof recipientDid !== 'string') return null
  const doc = await d.models.RecipientApproval.findOne({ appDid, recipientDid, environment }).lean()
  return doc ? toApprovalView(await withEventsWritten(d, doc)) : null
}

/** A request by id, or null; who may see it is the caller's check. */
export async function findApproval(d: Pick<AppsDomain, 'models'>, id: unknown): Promise<RecipientApprovalView | null> {
  const doc = typeof id === 'string' ? await d.models.RecipientApproval.findOne({ id }).lean() : null
  return doc ? toApprovalView(doc) : null
}

/** The requests addressed to the signed-in creator in its environment, newest first. */
export async function listDashboardApprovals(d: Pick<AppsDomain, 'models'>, who: DashboardActor): Promise<RecipientApprovalView[]> {
  const docs = await d.models.RecipientApproval.find({ recipientDid: who.actorDid, environment: who.environment })
    .sort({ createdAt: -1, id: 1 })
    .limit(DASHBOARD_APPROVALS_LIMIT)
    .lean()
  return docs.map(toApprovalView)
}

/** The request `id` if it is addressed to the signed-in creator in its environment; NotFound otherwise. */
export async function findAddressedApproval(d: Pick<AppsDomain, 'models'>, who: DashboardActor, id: string): Promise<StoredApproval> {
  const doc =
    typeof id === 'string' ? await d.models.RecipientApproval.findOne({ id, recipientDid: who.actorDid, environment: who.environment }).lean() : null
  // Someone else's request is as unknown as a request that does not exist.
  if (!doc) throw new ContractError('NotFound', `approval request ${String(id)} not found`)
  return doc
}

/** NotFound unless the request is addressed to the signed-in creator in its environment. */
export async function getDashboardApproval(d: Pick<AppsDomain, 'models' | 'logger'>, who: DashboardActor, id: string): Promise<RecipientApprovalView> {
  return toApprovalView(await withEventsWritten(d, await findAddressedApproval(d, who, id)))
}
