import gql from 'graphql-tag'
import { TICKET_PAGE_DEFAULT, TICKET_PAGE_MAX } from './domain/organizer'

/**
 * Apollo Federation v1 SDL (composed by the mercurius gateway). The tickets domain serves apps (through the XRPC
 * adapter, as the app it verified); it reads the app's environment and tickets module from the apps domain itself,
 * starts a hold's checkout in the payments domain, and is told by payments when that checkout ends.
 */
export const typeDefs = gql`
  "a tier of a ticketed event, as its app sees it"
  type TicketTier {
    ticketTypeId: ID!
    name: String!
    "price per ticket in integer minor units; 0 is a free tier"
    priceAmount: Int!
    "lowercase currency code"
    currency: String!
    "total tickets of the tier (private to the app and the organizer)"
    capacity: Int!
    "most tickets of the tier one buyer may hold or own at once"
    perBuyerLimit: Int!
    salesStartAt: String
    salesEndAt: String
  }

  "an event's ticketing, as configured by its organizer through an app"
  type TicketedEvent {
    eventUri: String!
    environment: String!
    holdDurationSeconds: Int!
    tiers: [TicketTier!]!
  }

  "a ticket as its buyer's page shows it"
  type BuyerTicket {
    id: ID!
    "test | live"
    environment: String!
    status: String!
    ticketTypeId: ID!
    tierName: String!
    eventUri: String!
    "what the ticket's QR code carries (check-in looks it up)"
    scanToken: String
  }

  "an organizer's event, as their dashboard lists it"
  type OrganizerEventSummary {
    eventUri: String!
    appDid: String!
    createdAt: String!
  }

  type OrganizerTier {
    ticketTypeId: ID!
    name: String!
    priceAmount: Int!
    currency: String!
    capacity: Int!
    "tickets issued or checked in"
    sold: Int!
    "seats in active holds (and claims in flight)"
    held: Int!
    available: Int!
  }

  type OrganizerTicket {
    id: ID!
    ticketTypeId: ID!
    tierName: String!
    buyerDid: String!
    status: String!
    source: String!
    appOrderId: String
    issuedAt: String!
  }

  type OrganizerEvent {
    eventUri: String!
    appDid: String!
    environment: String!
    tiers: [OrganizerTier!]!
    "a page of the event's tickets, oldest first: at most limit (1 to ${TICKET_PAGE_MAX}), then the next page from after = nextCursor (InvalidRequest for a value not shaped like one)"
    ticketPage(after: String, limit: Int = ${TICKET_PAGE_DEFAULT}): OrganizerTicketPage!
  }

  type OrganizerTicketPage {
    tickets: [OrganizerTicket!]!
    "the cursor of the next page; null on the last"
    nextCursor: String
  }

  type TierAvailability {
    ticketTypeId: ID!
    "capacity minus active holds minus issued tickets; 0 outside the sale window"
    available: Int!
  }

  type TicketAvailability {
    eventUri: String!
    items: [TierAvailability!]!
  }

  "issued | checked-in | voided"
  type Ticket {
    id: ID!
    status: String!
    ticketTypeId: ID!
    eventUri: String!
    buyerDid: String!
    "the buyer's page of the ticket, with its QR code: {checkout_url}/checkout/<page token>; null for tickets issued before pages"
    url: String
  }

  input TierInput {
    "an existing tier to update; absent: a new tier"
    ticketTypeId: ID
    name: String!
    priceAmount: Int!
    currency: String!
    capacity: Int!
    "default 1 for a free tier, 10 for a paid one"
    perBuyerLimit: Int
    salesStartAt: String
    salesEndAt: String
  }

  input ConfigureTicketTiersInput {
    environment: String
    eventUri: String!
    "the organizer whose assertion the adapter verified; must be the authority of eventUri"
    organizerDid: String!
    holdDurationSeconds: Int
    tiers: [TierInput!]!
  }

  input ClaimFreeTicketInput {
    environment: String
    eventUri: String!
    ticketTypeId: String!
    "the buyer whose assertion the adapter verified"
    buyerDid: String!
    "the app's claim key, scoped by the service to app, environment, event, tier and buyer; absent, that scope alone is the key"
    idempotencyKey: String
  }

  input HoldItemInput {
    ticketTypeId: String!
    quantity: Int!
  }

  input CreateTicketHoldInput {
    environment: String
    eventUri: String!
    "the buyer (whose assertion, when the app sent one, the adapter verified)"
    buyerDid: String!
    "the app's order id: one hold per (app, environment, appOrderId)"
    appOrderId: String!
    items: [HoldItemInput!]!
    "where the checkout sends the buyer after paying or canceling; the checkout page itself when absent"
    returnUrl: String
    cancelUrl: String
  }

  type HoldCheckout {
    "the browser checkout URL (on the checkout host)"
    url: String!
    "the checkout's status token (network.svc.payment.status)"
    token: String!
  }

  type TicketHold {
    holdId: ID!
    expiresAt: String!
    checkout: HoldCheckout!
  }

  "a hold's payment, as the payments domain reports it"
  input HoldPaymentInput {
    checkoutId: ID!
    "the payment record's AT-URI"
    paymentUri: String!
  }

  extend type Query {
    "apps: each tier's availability (EventRequired, TicketsModuleDisabled, AppUnauthorized)"
    ticketAvailability(environment: String, eventUri: String!): TicketAvailability!
    "the hosted checkout pages: the tickets a paid hold issued, for the buyer's page"
    holdTickets(holdId: ID!): [BuyerTicket!]!
    "the ticket a page token opens (ticket.url), null for none; for the service checkout"
    ticketPage(pageToken: String!): BuyerTicket
    "the organizer's dashboard: their events in the session's environment"
    organizerEvents: [OrganizerEventSummary!]!
    "the organizer's dashboard: one of their events, its tiers and tickets (NotFound for another's)"
    organizerEvent(eventUri: String!): OrganizerEvent!
  }

  extend type Mutation {
    "apps, with an organizer's assertion: create or update an event's tiers (OrganizerAssertionInvalid, AppUnauthorized, TicketsModuleDisabled, InvalidRequest)"
    configureTicketTiers(input: ConfigureTicketTiersInput!): TicketedEvent!
    "apps, with a buyer's assertion: claim a free ticket (TicketHoldUnavailable, DuplicateClaim, TicketsModuleDisabled, AppUnauthorized)"
    claimFreeTicket(input: ClaimFreeTicketInput!): Ticket!
    "apps, with an optional buyer's assertion: hold paid tickets and get their checkout (TicketHoldUnavailable, TicketsModuleDisabled, AppUnauthorized)"
    createTicketHold(input: CreateTicketHoldInput!): TicketHold!
    "the payments domain, right before it charges a hold's checkout: keeps the hold's seats; false when the hold lapsed"
    secureTicketHold(holdId: ID!): Boolean!
    "the payments domain, once a hold's checkout ended: paid issues its tickets, no payment returns its capacity"
    settleTicketHold(holdId: ID!, payment: HoldPaymentInput): [Ticket!]!
    "the organizer's dashboard: void a ticket of their event (its seat returns; ticket.voided)"
    voidTicket(ticketId: ID!): Ticket!
  }
`
