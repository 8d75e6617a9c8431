import gql from 'graphql-tag'

/** Apollo Federation v1 SDL (composed by the mercurius gateway). */
export const typeDefs = gql`
  type App @key(fields: "did") {
    did: ID!
    name: String
    createdAt: String!
    "operators only"
    environments: [AppEnvironmentConfig!]!
  }

  "What the calling app may reach in one environment; other subgraphs extend it (actors: payoutStatus, profile)."
  type AppAccess @key(fields: "appDid environment") {
    appDid: ID!
    environment: String!
  }

  type WebhookState {
    configured: Boolean!
    url: String
    paused: Boolean!
  }

  type AppModules {
    payments: Boolean!
    products: Boolean!
    tickets: Boolean!
  }

  type TicketingOptions {
    qrPasses: Boolean!
    walletPasses: Boolean!
  }

  type TicketFee {
    bps: Int!
    flatAmount: Int!
    flatCurrency: String!
    passToBuyer: Boolean!
  }

  type AppEnvironmentConfig {
    appDid: ID!
    environment: String!
    status: String!
    appUrl: String!
    feeShareBps: Int!
    webhook: WebhookState!
    modules: AppModules!
    ticketing: TicketingOptions!
    ticketFee: TicketFee!
    updatedAt: String!
  }

  type DeveloperWebhookState {
    configured: Boolean!
    paused: Boolean!
  }

  type DeveloperConfig {
    appDid: ID!
    environment: String!
    status: String!
    webhook: DeveloperWebhookState!
    modules: AppModules!
  }

  type RequestLogEntry {
    requestId: String!
    environment: String
    appDid: String
    method: String!
    path: String!
    status: Int!
    errorCode: String
    keyPrefix: String
    durationMs: Int!
    createdAt: String!
  }

  input ModulesInput {
    tickets: Boolean
  }

  input TicketingInput {
    qrPasses: Boolean
    walletPasses: Boolean
  }

  input TicketFeeInput {
    passToBuyer: Boolean
  }

  input UpdateAppConfigInput {
    environment: String!
    modules: ModulesInput
    ticketing: TicketingInput
    ticketFee: TicketFeeInput
    webhookUrl: String
    appUrl: String
  }

  input DeveloperRequestInput {
    requestId: String!
    environment: String
    appDid: String
    method: String!
    path: String!
    status: Int!
    errorCode: String
    keyPrefix: String
    durationMs: Float!
  }

  extend type Query {
    "the calling app's configuration (app service-auth)"
    appConfig(environment: String!): AppEnvironmentConfig!
    "the calling app in one environment (app service-auth): checked here, extended by other subgraphs; environment defaults to the app's only configured one"
    appAccess(environment: String): AppAccess!
    "the developer configuration behind a restricted API key (utility route)"
    developerConfig(app: String, environment: String): DeveloperConfig!
    "operators: an app registration"
    app(did: ID!): App
    "operators: the developer request log of an environment, newest first"
    requestLog(environment: String, appDid: String, limit: Int): [RequestLogEntry!]!
  }

  extend type Mutation {
    "the calling app updates its configuration (app service-auth); last write wins"
    updateAppConfig(input: UpdateAppConfigInput!): AppEnvironmentConfig!
    "the XRPC adapter records a developer utility call"
    recordDeveloperRequest(input: DeveloperRequestInput!): Boolean!
  }
`
