import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import type { GatewayMethod } from './types'

export const declineRecord: GatewayMethod<'money.svc.payment.declineRecord', { declinePaymentRecord: { paymentUri: string; status: string; declinedAt: string } }> = {
  nsid: 'money.svc.payment.declineRecord',
  auth: 'app',
  check: ({ input }) => assertOnlyKeys(input, { environment: true, paymentUri: true, reason: true }, (f) => `${f} is not accepted`),
  operation: `mutation DeclineRecord($input: DeclineRecordInput!) { declinePaymentRecord(input: $input) { paymentUri status declinedAt } }`,
  variables: ({ input }) => ({ input }),
  output: ({ declinePaymentRecord: d }) => ({ paymentUri: d.paymentUri, status: d.status, declinedAt: d.declinedAt }),
  errors: APP_ACCESS_ERRORS,
}
