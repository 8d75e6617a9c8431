/**
 * Recipient approvals: an app asks a creator (the recipient) to approve its terms (payment types, fee share,
 * public records) in one environment; the creator decides in the dashboard. One request per app DID, recipient
 * DID and environment (unique index), so money.svc.app.requestRecipientApproval is idempotent and safe under
 * concurrent duplicates. The states and how moves stay consistent on FerretDB: state.ts; the events: events.ts.
 */
export { canonicalJson, termsHashOf, type ApprovalTerms, type AttestationVisibility, type PaymentType } from './terms'
export { effectiveStatus } from './state'
export { approvalUrls, toApprovalView, type RecipientApprovalView } from './views'
export { requestRecipientApproval, REQUEST_REASON_MAX_CHARACTERS, SETUP_RETURN_URL_MAX_LENGTH, type RecipientApprovalInput } from './request'
export {
  DASHBOARD_APPROVALS_LIMIT,
  findAppApproval,
  findApproval,
  getDashboardApproval,
  listDashboardApprovals,
  type DashboardActor,
} from './queries'
export { paymentSetupOf, type PaymentSetup } from './payment-setup'
export { acceptApproval } from './accept'
export { declineApproval } from './decline'
export { revokeApproval } from './revoke'
export { blockApproval } from './block'
export { unblockApproval } from './unblock'
export { DUE_EVENT_GRACE_MS, writeDueApprovalEvents } from './recovery'
