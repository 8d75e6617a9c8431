import gql from 'graphql-tag'
import { REQUEST_LOG_DEFAULT_LIMIT } from './domain/request-log'

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
    "the app's approval request to a recipient in this environment, or null (read-only: never creates one)"
    recipientApproval(recipientDid: String!): RecipientApproval
    "the app's configuration in this environment"
    config: AppEnvironmentConfig!
  }

  # an actor of the actors subgraph; an approval points at its recipient by DID and environment. The one field
  # this subgraph adds also keeps the type non-empty when the gateway composes apps without actors.
  extend type ActorProfile @key(fields: "did environment") {
    did: ID! @external
    environment: String! @external
    "the approval requests addressed to this actor in its environment, newest first (its own dashboard session, operators)"
    recipientApprovals: [RecipientApproval!]!
  }

  type PublicRecordDefaults {
    "public | private"
    attestation: String
  }

  type PublicRecords {
    enabled: Boolean!
    defaults: PublicRecordDefaults!
  }

  "An app's request that a creator (the recipient) approve its terms in one environment; one per app, recipient and environment."
  type RecipientApproval @key(fields: "id") {
    "apr_…"
    id: ID!
    appDid: ID!
    app: App!
    "the app's registered origin in this environment (where the creator returns)"
    appOrigin: String!
    recipientDid: ID!
    environment: String!
    "pending | approved | declined | revoked | blocked"
    status: String!
    "tip | shop | subscription | ticket, sorted"
    paymentTypes: [String!]!
    feeShareBps: Int!
    "the share a payment takes now: feeShareBps capped by the app's registered share, which an operator may lower after the creator accepted"
    appliedFeeShareBps: Int!
    publicRecords: PublicRecords!
    requestReason: String
    setupReturnUrl: String
    "sha256 of the canonical terms (paymentTypes, feeShareBps, publicRecords); the creator accepts exactly these"
    termsHash: String!
    "counts the decisions asked of the creator (new terms, asked again after a decline or revoke, the end of an approval by revoke or block); unchanged while approved, so id and revision name one grant"
    revision: Int!
    "when the creator approved the current terms; null unless approved"
    approvedAt: String
    "the creator's review page"
    dashboardUrl: String!
    "the creator's onboarding page: app terms, payout setup, return to the app origin"
    onboardingUrl: String!
    "the recipient's actor (actors subgraph); null when it has none in this environment"
    recipient: ActorProfile
    "not-checked (not approved) | ready | restricted | incomplete: whether the approved recipient can be paid"
    paymentSetup: String!
    createdAt: String!
    updatedAt: String!
  }

  type WebhookState {
    "the chosen channel has its URL"
    configured: Boolean!
    "the HTTP webhook's URL"
    url: String
    paused: Boolean!
    "webhook | xrpc"
    channel: String!
    "the origin of the app's XRPC service (xrpc channel)"
    receiverUrl: String
  }

  "Where an app environment's events go: read by the events workers before each attempt."
  type EventEndpoint {
    appDid: ID!
    environment: String!
    "webhook | xrpc"
    channel: String!
    "the chosen channel's URL (webhook URL or XRPC receiver origin); null when not configured"
    url: String
    configured: Boolean!
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

  "an update's result: the configuration, and the signing secret when the app is to be given it"
  type AppConfigUpdate {
    config: AppEnvironmentConfig!
    "whsec_…, the current secret: in the update that first configures a channel and in every update naming the channel's URL (docs/events.md)"
    signingSecret: String
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
    "the chosen channel has its URL"
    configured: Boolean!
    paused: Boolean!
    "webhook | xrpc"
    channel: String!
    "set when the events workers disabled the endpoint (it answered 410, or failed every attempt for days); unpausing (webhookPaused false) clears it"
    disabled: EndpointDisabled
  }

  "Why and when an event endpoint was disabled (docs/events.md, Endpoint health)."
  type EndpointDisabled {
    "gone | failing"
    reason: String!
    "ISO 8601"
    at: String!
  }

  "What a developer utility route may act on, after the API key's checks (the precheck of test-event, deliveries, redrive)."
  type DeveloperAccess {
    appDid: ID!
    environment: String!
    "the key's display prefix (svc_rk_test_ + 6 characters)"
    keyPrefix: String!
    webhook: DeveloperWebhookState!
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
    "webhook | xrpc (docs/events.md, Channels)"
    eventChannel: String
    "the origin of the app's XRPC service for the xrpc channel (the webhookUrl policy)"
    receiverUrl: String
    "true holds every delivery of this app environment; false releases them"
    webhookPaused: Boolean
    "true removes the webhook URL (refused together with webhookUrl)"
    removeWebhookUrl: Boolean
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

  input PublicRecordDefaultsInput {
    attestation: String
  }

  input PublicRecordsInput {
    enabled: Boolean
    defaults: PublicRecordDefaultsInput
  }

  input RecipientApprovalInput {
    "the app's only configured environment when absent"
    environment: String
    recipientDid: String!
    paymentTypes: [String!]!
    feeShareBps: Int
    publicRecords: PublicRecordsInput
    requestReason: String
    setupReturnUrl: String
  }

  extend type Query {
    "the calling app's configuration (app service-auth)"
    appConfig(environment: String!): AppEnvironmentConfig!
    "the calling app in one environment (app service-auth): checked here, extended by other subgraphs; environment defaults to the app's only configured one"
    appAccess(environment: String): AppAccess!
    "the payments domain (service payments) reading the facts it decides on for the app it serves: as appAccess, for that app"
    appAccessFor(appDid: ID!, environment: String): AppAccess!
    "the developer configuration behind a restricted API key (utility route)"
    developerConfig(app: String, environment: String): DeveloperConfig!
    "the API key's checks for a developer utility route, in the documented order (environment defaults to the key's; liveAllowed false refuses live)"
    developerAccess(app: String, environment: String, permission: String!, liveAllowed: Boolean): DeveloperAccess!
    "the events workers (service events) and operators: where an app environment's events go"
    eventEndpoint(appDid: ID!, environment: String!): EventEndpoint!
    "operators: an app registration"
    app(did: ID!): App
    "operators: the developer request log of an environment, newest first"
    requestLog(environment: String, appDid: String, limit: Int = ${REQUEST_LOG_DEFAULT_LIMIT}): [RequestLogEntry!]!
    "dashboard: the approval requests addressed to the signed-in creator in its environment, newest first"
    dashboardApprovals: [RecipientApproval!]!
    "dashboard: one approval request addressed to the signed-in creator (NotFound otherwise)"
    dashboardApproval(id: ID!): RecipientApproval!
  }

  extend type Mutation {
    "the calling app updates its configuration (app service-auth); last write wins"
    updateAppConfig(input: UpdateAppConfigInput!): AppConfigUpdate!
    "the XRPC adapter records a developer utility call"
    recordDeveloperRequest(input: DeveloperRequestInput!): Boolean!
    "the events workers disable an app environment's event endpoint (reason gone | failing): paused, with the reason; idempotent; not when its URL is no longer url (the failures were another URL's)"
    disableEventEndpoint(appDid: ID!, environment: String!, reason: String!, url: String): EventEndpoint!
    "the calling app asks a creator to approve its terms (app service-auth); idempotent by app, recipient and environment"
    requestRecipientApproval(input: RecipientApprovalInput!): RecipientApproval!
    "dashboard: the signed-in creator accepts the terms it was shown (termsHash)"
    acceptRecipientApproval(id: ID!, termsHash: String!): RecipientApproval!
    "dashboard: pending → declined"
    declineRecipientApproval(id: ID!): RecipientApproval!
    "dashboard: approved → revoked"
    revokeRecipientApproval(id: ID!): RecipientApproval!
    "dashboard: any → blocked (the app's requests are refused)"
    blockRecipientApproval(id: ID!): RecipientApproval!
    "dashboard: blocked → declined"
    unblockRecipientApproval(id: ID!): RecipientApproval!
  }
`
