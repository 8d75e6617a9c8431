import { ContractError } from '@svc/errors'
import { graphql } from '@svc/graph'
import { APP_ACCESS_ERRORS } from './app-access'
import { renameErrors, type HandlerContext } from './types'

const AVAILABILITY = graphql(`query TicketAvailability($environment: String, $eventUri: String!) {
  ticketAvailability(environment: $environment, eventUri: $eventUri) { eventUri items { ticketTypeId available } }
}`)

/** The tickets domain counts each tier's seats (lapsed holds released on the way); safe to poll. */
export async function getTicketAvailability({ params, graph }: HandlerContext<'tickets.svc.getTicketAvailability'>) {
  if (params.eventUri === undefined) throw new ContractError('EventRequired', 'the eventUri parameter (AT-URI of the event) is required')
  const { ticketAvailability: a } = await graph(AVAILABILITY, { environment: params.environment ?? null, eventUri: params.eventUri }).catch(
    renameErrors(APP_ACCESS_ERRORS),
  )
  return { eventUri: a.eventUri, items: a.items.map((i) => ({ ticketTypeId: i.ticketTypeId, available: i.available })) }
}
