/**
 * The gateway operations behind the dashboard pages (principal: the signed-in creator's dashboard session), typed
 * from the apps and actors subgraphs' SDL.
 */
import { graphql, type ResultOf } from '@svc/graph'

export const DASHBOARD_ACTOR_FIELDS = graphql(`fragment DashboardActorFields on ActorProfile { did environment displayName payable payoutStatus }`)
export const APPROVAL_SUMMARY_FIELDS = graphql(`fragment ApprovalSummaryFields on RecipientApproval {
  id appDid app { name } appOrigin status paymentTypes feeShareBps appliedFeeShareBps createdAt
}`)
export const APPROVAL_DETAIL_FIELDS = graphql(`fragment ApprovalDetailFields on RecipientApproval {
  ...ApprovalSummaryFields
  recipientDid environment publicRecords { enabled defaults { attestation } } requestReason setupReturnUrl termsHash approvedAt updatedAt
}`)

export type DashboardActor = ResultOf<typeof DASHBOARD_ACTOR_FIELDS>
export type ApprovalSummary = ResultOf<typeof APPROVAL_SUMMARY_FIELDS>
export type ApprovalDetail = ResultOf<typeof APPROVAL_DETAIL_FIELDS> & ApprovalSummary

export const HOME = graphql(`query DashboardHome { dashboardActor { ...DashboardActorFields } dashboardApprovals { ...ApprovalSummaryFields } }`)
export type HomeData = ResultOf<typeof HOME>

export const APPROVAL = graphql(`query DashboardApproval($id: ID!) {
  dashboardActor { ...DashboardActorFields }
  dashboardApproval(id: $id) { ...ApprovalDetailFields }
}`)
export type ApprovalData = ResultOf<typeof APPROVAL>

/** The creator's decisions on a request; each is a dashboard-only mutation of the apps subgraph. */
export const APPROVAL_ACTIONS = {
  accept: graphql(`mutation Accept($id: ID!, $termsHash: String!) { acceptRecipientApproval(id: $id, termsHash: $termsHash) { ...ApprovalDetailFields } }`),
  decline: graphql(`mutation Decline($id: ID!) { declineRecipientApproval(id: $id) { ...ApprovalDetailFields } }`),
  revoke: graphql(`mutation Revoke($id: ID!) { revokeRecipientApproval(id: $id) { ...ApprovalDetailFields } }`),
  block: graphql(`mutation Block($id: ID!) { blockRecipientApproval(id: $id) { ...ApprovalDetailFields } }`),
  unblock: graphql(`mutation Unblock($id: ID!) { unblockRecipientApproval(id: $id) { ...ApprovalDetailFields } }`),
} as const
export type ApprovalAction = keyof typeof APPROVAL_ACTIONS

export const COMPLETE_TEST_PAYOUT_ONBOARDING = graphql(`mutation CompleteTestPayoutOnboarding { completeTestPayoutOnboarding { did payoutStatus payable } }`)
