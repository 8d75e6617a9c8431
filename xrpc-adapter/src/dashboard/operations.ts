/** The gateway operations behind the dashboard pages (principal: the signed-in creator's dashboard session). */

export interface DashboardActor {
  did: string
  environment: string
  displayName: string | null
  payable: boolean
  payoutStatus: string
}

export interface ApprovalSummary {
  id: string
  appDid: string
  app: { name: string | null }
  appOrigin: string
  status: string
  paymentTypes: string[]
  feeShareBps: number
  createdAt: string
}

export interface ApprovalDetail extends ApprovalSummary {
  recipientDid: string
  environment: string
  publicRecords: { enabled: boolean; defaults: { attestation: string | null } }
  requestReason: string | null
  setupReturnUrl: string | null
  termsHash: string
  approvedAt: string | null
  updatedAt: string
}

const ACTOR = 'dashboardActor { did environment displayName payable payoutStatus }'
const SUMMARY = 'id appDid app { name } appOrigin status paymentTypes feeShareBps createdAt'
const DETAIL = `${SUMMARY} recipientDid environment publicRecords { enabled defaults { attestation } } requestReason setupReturnUrl termsHash approvedAt updatedAt`

export const HOME = `query DashboardHome { ${ACTOR} dashboardApprovals { ${SUMMARY} } }`
export type HomeData = { dashboardActor: DashboardActor | null; dashboardApprovals: ApprovalSummary[] }

export const APPROVAL = `query DashboardApproval($id: ID!) { ${ACTOR} dashboardApproval(id: $id) { ${DETAIL} } }`
export type ApprovalData = { dashboardActor: DashboardActor | null; dashboardApproval: ApprovalDetail }

/** The creator's decisions on a request; each is a dashboard-only mutation of the apps subgraph. */
export const APPROVAL_ACTIONS = {
  accept: `mutation Accept($id: ID!, $termsHash: String!) { acceptRecipientApproval(id: $id, termsHash: $termsHash) { ${DETAIL} } }`,
  decline: `mutation Decline($id: ID!) { declineRecipientApproval(id: $id) { ${DETAIL} } }`,
  revoke: `mutation Revoke($id: ID!) { revokeRecipientApproval(id: $id) { ${DETAIL} } }`,
  block: `mutation Block($id: ID!) { blockRecipientApproval(id: $id) { ${DETAIL} } }`,
  unblock: `mutation Unblock($id: ID!) { unblockRecipientApproval(id: $id) { ${DETAIL} } }`,
} as const
export type ApprovalAction = keyof typeof APPROVAL_ACTIONS

export const COMPLETE_TEST_PAYOUT_ONBOARDING = `mutation CompleteTestPayoutOnboarding { completeTestPayoutOnboarding { did payoutStatus payable } }`
