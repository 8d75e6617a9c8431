/**
 * The gateway operations behind the organizer's pages (principal: the signed-in organizer's dashboard session),
 * typed from the tickets subgraph's SDL.
 */
import { graphql, type ResultOf } from '@svc/graph'

export const ORGANIZER_EVENTS = graphql(`query DashboardOrganizerEvents { organizerEvents { eventUri appDid createdAt } }`)
export type OrganizerEventsData = ResultOf<typeof ORGANIZER_EVENTS>

export const ORGANIZER_EVENT = graphql(`query DashboardOrganizerEvent($eventUri: String!, $after: String) {
  organizerEvent(eventUri: $eventUri) {
    eventUri appDid environment
    tiers { ticketTypeId name priceAmount currency capacity sold held available }
    ticketPage(after: $after) { tickets { id ticketTypeId tierName buyerDid status issuedAt } nextCursor }
  }
}`)
export type OrganizerEventData = ResultOf<typeof ORGANIZER_EVENT>

/** The attendee list, read a page of 5,000 tickets at a time. */
export const ATTENDEES = graphql(`query DashboardAttendees($eventUri: String!, $after: String) {
  organizerEvent(eventUri: $eventUri) {
    ticketPage(after: $after, limit: 5000) { tickets { id tierName buyerDid status source appOrderId issuedAt } nextCursor }
  }
}`)
export type AttendeesData = ResultOf<typeof ATTENDEES>

export const VOID_TICKET = graphql(`mutation DashboardVoidTicket($ticketId: ID!) { voidTicket(ticketId: $ticketId) { id status eventUri } }`)
