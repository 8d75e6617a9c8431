import { graphql } from '@svc/graph'
import { INPUT_KEYS } from '@svc/lexicons/types'
import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { releaseOnRefusal, renameErrors, type HandlerContext } from './types'

const CLAIM = graphql(`mutation ClaimFreeTicket($input: ClaimFreeTicketInput!) { claimFreeTicket(input: $input) { id status url } }`)

/**
 * The buyer's assertion is required. A retry of the same claim (same idempotencyKey, or none again) may carry the same assertion:
 * its `jti` is accepted again for that claim only. A claim refused for its input (a tier not of the event or not free,
 * not on sale, sold out, already claimed) takes nothing, so it leaves the assertion unspent: the corrected claim may
 * carry it. The tickets domain takes the seat and issues the ticket; the answer carries the buyer's page of it (`url`,
 * on the checkout host).
 */
export async function claimFreeTicket({ input, graph, assertion, caller }: HandlerContext<'tickets.svc.claimFreeTicket'>) {
  assertOnlyKeys(input, INPUT_KEYS['tickets.svc.claimFreeTicket'], (field) => `${field} is not a field of a free claim`)
  const { buyerAssertionJwt, ...claim } = input
  // not the environment as sent: a retry may name the one the first call left to the default
  const replayScope = JSON.stringify(['claim', caller.appDid, input.eventUri, input.ticketTypeId, input.buyerDid, input.idempotencyKey ?? null])
  const buyer = await assertion(buyerAssertionJwt, { iss: input.buyerDid, code: 'BuyerAssertionInvalid', replayScope })
  const { claimFreeTicket: t } = await graph(CLAIM, { input: claim }).catch(releaseOnRefusal(buyer)).catch(renameErrors(APP_ACCESS_ERRORS))
  return { ticket: { id: t.id, status: t.status, ...(t.url ? { url: t.url } : {}) } }
}
