import { APP_ACCESS_ERRORS, environmentOf } from './app-access'
import { assertOnlyKeys } from './strict-body'
import type { GatewayMethod } from './types'

export const declineRecord: GatewayMethod<
  { declinePaymentRecord: { paymentUri: string; status: string; declinedAt: string } },
  { appAccess: { environment: string } }
> = {
  nsid: 'money.svc.payment.declineRecord',
  auth: 'app',
  check: ({ input }) => assertOnlyKeys(input, { environment: true, paymentUri: true, reason: true }, (f) => `${f} is not accepted`),
  precheck: {
    operation: `query DeclineRecordPrecheck($environment: String) { appAccess(environment: $environment) { environment } }`,
    variables: ({ input }) => ({ environment: environmentOf(input.environment) }),
  },
  operation: `mutation DeclineRecord($input: DeclineRecordInput!) { declinePaymentRecord(input: $input) { paymentUri status declinedAt } }`,
  variables: ({ input }, { appAccess: a }) => ({ input: { ...input, environment: a.environment } }),
  output: ({ declinePaymentRecord: d }) => ({ paymentUri: d.paymentUri, status: d.status, declinedAt: d.declinedAt }),
  errors: APP_ACCESS_ERRORS,
}
