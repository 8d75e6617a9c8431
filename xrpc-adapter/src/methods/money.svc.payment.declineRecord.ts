import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { graphql } from '@svc/graph'
import { gatewayMethod } from './types'

export const declineRecord = gatewayMethod({
  nsid: 'money.svc.payment.declineRecord',
  auth: 'app',
  check: ({ input }) => assertOnlyKeys(input, { environment: true, paymentUri: true, reason: true }, (f) => `${f} is not accepted`),
  operation: graphql(`mutation DeclineRecord($input: DeclineRecordInput!) { declinePaymentRecord(input: $input) { paymentUri status declinedAt } }`),
  variables: ({ input }) => ({ input }),
  output: ({ declinePaymentRecord: d }) => ({ paymentUri: d.paymentUri, status: d.status, declinedAt: d.declinedAt }),
  errors: APP_ACCESS_ERRORS,
})
