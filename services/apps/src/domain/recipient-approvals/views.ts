/** An approval request as the app, the creator and operators read it, and the creator's pages of it. */
import type { ApprovalStatus } from '../../models'
import type { Environment } from '@svc/vocabulary'
import { effectiveStatus, type StoredApproval } from './state'
import type { RecipientApproval } from '../../generated/graph-types'

/** The SDL's RecipientApproval without the fields its resolvers add. */
export type RecipientApprovalView = Omit<
  RecipientApproval,
  'app' | 'appOrigin' | 'appliedFeeShareBps' | 'dashboardUrl' | 'onboardingUrl' | 'recipient' | 'paymentSetup' | 'environment' | 'status'
> & {
  environment: Environment
  status: ApprovalStatus
}

export function publicRecordsOf(doc: StoredApproval): RecipientApprovalView['publicRecords'] {
  return { enabled: Boolean(doc.publicRecords?.enabled), defaults: { attestation: doc.publicRecords?.defaults?.attestation ?? 'public' } }
}

export function toApprovalView(doc: StoredApproval): RecipientApprovalView {
  const status = effectiveStatus(doc)
  return {
    id: doc.id,
    appDid: doc.appDid,
    recipientDid: doc.recipientDid,
    environment: doc.environment as Environment,
    status,
    paymentTypes: [...(doc.paymentTypes ?? [])],
    feeShareBps: doc.feeShareBps,
    publicRecords: publicRecordsOf(doc),
    requestReason: doc.requestReason ?? null,
    setupReturnUrl: doc.setupReturnUrl ?? null,
    termsHash: doc.termsHash,
    revision: doc.revision,
    approvedAt: status === 'approved' && doc.approvedAt ? doc.approvedAt.toISOString() : null,
    createdAt: (doc.createdAt ?? new Date(0)).toISOString(),
    updatedAt: (doc.updatedAt ?? doc.createdAt ?? new Date(0)).toISOString(),
  }
}

/** The creator's pages of a request: `${dashboardUrl}/approvals/<id>` and `${dashboardUrl}/onboarding/<id>`. */
export function approvalUrls(dashboardUrl: string, id: string): { dashboardUrl: string; onboardingUrl: string } {
  const base = dashboardUrl.replace(/\/+$/, '')
  return { dashboardUrl: `${base}/approvals/${id}`, onboardingUrl: `${base}/onboarding/${id}` }
}
