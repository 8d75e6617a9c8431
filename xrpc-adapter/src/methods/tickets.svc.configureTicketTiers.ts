import { graphql } from '@svc/graph'
import { INPUT_KEYS } from '@svc/lexicons/types'
import { APP_ACCESS_ERRORS } from './app-access'
import { assertOnlyKeys } from './strict-body'
import { renameErrors, type HandlerContext } from './types'

const CONFIGURE = graphql(`mutation ConfigureTicketTiers($input: ConfigureTicketTiersInput!) {
  configureTicketTiers(input: $input) {
    eventUri holdDurationSeconds
    tiers { ticketTypeId name priceAmount currency capacity perBuyerLimit salesStartAt salesEndAt }
  }
}`)

/**
 * The organizer's assertion proves the organizer authorized this app for the event; the tickets domain checks that
 * the organizer is the event's authority, the app's tickets module and that the event is this app's.
 */
export async function configureTicketTiers({ input, graph, assertion }: HandlerContext<'tickets.svc.configureTicketTiers'>) {
  assertOnlyKeys(input, INPUT_KEYS['tickets.svc.configureTicketTiers'], (field) => `${field} is not a field of a tier setup`)
  const { organizerAssertionJwt, ...setup } = input
  await assertion(organizerAssertionJwt, { iss: input.organizerDid, code: 'OrganizerAssertionInvalid' })
  const { configureTicketTiers: e } = await graph(CONFIGURE, { input: setup }).catch(renameErrors(APP_ACCESS_ERRORS))
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
