/**
 * The contract's connection rule: an app may take payments for a creator only while the creator's approval of the
 * app is current (`approved`) and the creator's payment setup is `ready`. Approval and payment readiness are separate
 * facts; a browser URL or an earlier approval event does not establish current authorization, so re-read the
 * connection with getRecipientApproval before enabling checkout.
 */
import type { Methods } from '@svc/lexicons/types'

/** The answer of money.svc.app.getRecipientApproval: the app's connection to one creator in one environment. */
export type RecipientConnection = Methods['money.svc.app.getRecipientApproval']['output']

/** True only when `status` is `approved` and `paymentSetup` is `ready` (null or undefined: false). */
export function isConnectionReady(conn: Pick<RecipientConnection, 'status' | 'paymentSetup'> | null | undefined): boolean {
  return conn?.status === 'approved' && conn.paymentSetup === 'ready'
}
