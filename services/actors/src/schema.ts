import gql from 'graphql-tag'

/**
 * Apollo Federation v1 SDL (composed by the mercurius gateway). AppAccess is owned by the apps subgraph,
 * which checks the calling app and resolves the environment; this subgraph adds the actor reads to it, so one
 * gateway request checks the app first and reads the actor in that environment.
 */
export const typeDefs = gql`
  extend type AppAccess @key(fields: "appDid environment") {
    appDid: ID! @external
    environment: String! @external
    "payout readiness of a recipient in this environment (ActorRequired, ActorNotFound)"
    payoutStatus(actor: String): PayoutStatus!
    "the payment profile of an actor in this environment (ActorNotFound)"
    profile(actor: String!): ActorProfile!
  }

  type PayoutStatus {
    actor: ID!
    payable: Boolean!
    "ready | onboarding-required | pending-verification | restricted"
    status: String!
  }

  "an actor of one environment; an entity, so other subgraphs can point at it by DID and environment"
  type ActorProfile @key(fields: "did environment") {
    did: ID!
    environment: String!
    "creator | project"
    kind: String!
    displayName: String
    payable: Boolean!
    payoutStatus: String!
    paymentTypes: [String!]!
    createdAt: String!
  }

  extend type Query {
    "operators, and the domains that read actors (services payments and apps): the actor of a DID in an environment, or null"
    actor(did: ID!, environment: String!): ActorProfile
    "dashboard: the signed-in creator's actor in the session's environment (null when it has none there)"
    dashboardActor: ActorProfile
  }

  extend type Mutation {
    "dashboard, test environment only: the signed-in creator completes payout onboarding (payout status ready)"
    completeTestPayoutOnboarding: ActorProfile!
  }
`
