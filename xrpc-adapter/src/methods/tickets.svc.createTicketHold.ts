import { graphql } from '@svc/graph'
import { INPUT_KEYS } from '@svc/lexicons/types'
import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { renameErrors, type HandlerContext } from './types'

const HOLD = graphql(`mutation CreateTicketHold($input: CreateTicketHoldInput!) { createTicketHold(input: $input) { holdId expiresAt checkout { url token } } }`)

/**
 * The buyer's assertion is optional; when sent it must be valid for `buyerDid`, and a retry of the same order may
 * send it again. The tickets domain reserves the items and starts the hold's checkout in the payments domain.
 */
export async function createTicketHold({ input, graph, assertion, caller }: HandlerContext<'tickets.svc.createTicketHold'>) {
  assertOnlyKeys(input, INPUT_KEYS['tickets.svc.createTicketHold'], (field) => `${field} is not a field of a ticket hold`)
  const { buyerAssertionJwt, ...hold } = input
  if (buyerAssertionJwt !== undefined) {
    // not the environment as sent: a retry may name the one the first call left to the default
    const replayScope = JSON.stringify(['hold', caller.appDid, input.appOrderId, input.buyerDid])
    await assertion(buyerAssertionJwt, { iss: input.buyerDid, code: 'BuyerAssertionInvalid', replayScope })
  }
  const { createTicketHold: h } = await graph(HOLD, { input: hold }).catch(renameErrors(APP_ACCESS_ERRORS))
  return { holdId: h.holdId, expiresAt: h.expiresAt, checkout: { url: h.checkout.url, token: h.checkout.token } }
}
