import { graphql } from '@svc/graph'
import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { renameErrors, type HandlerContext } from './types'
import { INPUT_KEYS } from '@svc/lexicons/types'

const DECLINE_RECORD = graphql(`mutation DeclineRecord($input: DeclineRecordInput!) { declinePaymentRecord(input: $input) { paymentUri status declinedAt } }`)

export async function declineRecord({ input, graph }: HandlerContext<'money.svc.payment.declineRecord'>) {
  assertOnlyKeys(input, INPUT_KEYS['money.svc.payment.declineRecord'], (f) => `${f} is not accepted`)
  const { declinePaymentRecord: d } = await graph(DECLINE_RECORD, { input }).catch(renameErrors(APP_ACCESS_ERRORS))
  return { paymentUri: d.paymentUri, status: d.status, declinedAt: d.declinedAt }
}
