import gql from 'graphql-tag'

/**
 * Apollo Federation v1 SDL (composed by the mercurius gateway). The tickets domain serves apps (through the XRPC
 * adapter, as the app it verified); it reads the app's environment and tickets module from the apps domain itself.
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
    "the app's claim key, scoped by the service to app, environment, event, tier and buyer"
    idempotencyKey: String!
  }

  extend type Query {
    "apps: each tier's availability (EventRequired, TicketsModuleDisabled, AppUnauthorized)"
    ticketAvailability(environment: String, eventUri: String!): TicketAvailability!
  }

  extend type Mutation {
    "apps, with an organizer's assertion: create or update an event's tiers (OrganizerAssertionInvalid, AppUnauthorized, TicketsModuleDisabled, InvalidRequest)"
    configureTicketTiers(input: ConfigureTicketTiersInput!): TicketedEvent!
    "apps, with a buyer's assertion: claim a free ticket (TicketHoldUnavailable, DuplicateClaim, TicketsModuleDisabled, AppUnauthorized)"
    claimFreeTicket(input: ClaimFreeTicketInput!): Ticket!
  }
`
