import { graphql } from '@svc/graph'
import { INPUT_KEYS } from '@svc/lexicons/types'
import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { releaseOnRefusal, renameErrors, type HandlerContext } from './types'

const CONFIGURE = graphql(`mutation ConfigureTicketTiers($input: ConfigureTicketTiersInput!) {
  configureTicketTiers(input: $input) {
    eventUri holdDurationSeconds
    tiers { ticketTypeId name priceAmount currency capacity perBuyerLimit salesStartAt salesEndAt }
  }
}`)

/**
 * The organizer's assertion proves the organizer authorized this app for the event; the tickets domain checks that
 * the organizer is the event's authority, the app's tickets module and that the event is this app's. The assertion
 * may be sent again for the same app, environment, event and organizer (retried after a 503), and for nothing else:
 * the organizer signs once per setup, not once per attempt, and a setup the organizer signed for test does not set
 * the event up in live. A setup refused for its input sets nothing up, so it leaves the assertion unspent: the
 * corrected one may carry it, also naming the environment the first left to the default.
 */
export async function configureTicketTiers({ input, graph, assertion, caller }: HandlerContext<'tickets.svc.configureTicketTiers'>) {
  assertOnlyKeys(input, INPUT_KEYS['tickets.svc.configureTicketTiers'], (field) => `${field} is not a field of a tier setup`)
  const { organizerAssertionJwt, ...setup } = input
  const replayScope = JSON.stringify(['configure', caller.appDid, input.environment ?? null, input.eventUri, input.organizerDid])
  const organizer = await assertion(organizerAssertionJwt, { iss: input.organizerDid, code: 'OrganizerAssertionInvalid', replayScope })
  const { configureTicketTiers: e } = await graph(CONFIGURE, { input: setup }).catch(releaseOnRefusal(organizer)).catch(renameErrors(APP_ACCESS_ERRORS))
  return {
    eventUri: e.eventUri,
    holdDurationSeconds: e.holdDurationSeconds,
    tiers: e.tiers.map((t) => ({
      ticketTypeId: t.ticketTypeId,
      name: t.name,
      priceAmount: t.priceAmount,
      currency: t.currency,
      capacity: t.capacity,
      perBuyerLimit: t.perBuyerLimit,
      ...(t.salesStartAt ? { salesStartAt: t.salesStartAt } : {}),
      ...(t.salesEndAt ? { salesEndAt: t.salesEndAt } : {}),
    })),
  }
}
