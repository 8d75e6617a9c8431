import gql from 'graphql-tag'
import { DEFAULT_LIST_LIMIT } from './domain/deliveries-log'

/** Apollo Federation v1 SDL (composed by the mercurius gateway). Principals per field: docs/events.md. */
export const typeDefs = gql`
  "One attempt to deliver (the attempt log)."
  type DeliveryAttempt {
    "1, 2, … across the delivery's runs"
    number: Int!
    run: Int!
    "webhook | xrpc; null when no channel was configured"
    channel: String
    "the URL it was sent to (the webhook's, or the receiver's); null when no channel was configured"
    url: String
    attemptedAt: String!
    durationMs: Int
    "the answer's HTTP status; null when none came (timeout, refused connection, no channel)"
    statusCode: Int
    "sending | delivered | failed | interrupted"
    outcome: String!
    error: String
    "the first 500 characters of the answer's body"
    responseExcerpt: String
    nextAttemptAt: String
  }

  "A delivery of one event to one app environment (the delivery log entry)."
  type Delivery @key(fields: "id") {
    "whd_…"
    id: ID!
    eventType: String!
    "pending | held | delivered | failed"
    status: String!
    attemptCount: Int!
    appDid: ID!
    environment: String!
    "the domain event (evt_…) it delivers; null for test events"
    eventId: String
    createdAt: String!
    lastAttemptAt: String
    nextAttemptAt: String
    lastStatusCode: Int
    lastError: String
    deliveredAt: String
    failedAt: String
    "the serialized envelope, as sent (operators only)"
    body: String
    attempts: [DeliveryAttempt!]!
  }

  type RedriveResult {
    ok: Boolean!
    "deliveries put back on the queue by this call"
    queued: Int!
    "why a redrive of one delivery queued nothing (null when it queued it, and for a batch)"
    reason: String
  }

  "A signing secret as issued: the secret itself in the answer that created it, and in every answer to the apps domain."
  type SigningSecretIssued {
    "whsec_…; null for an operator's call that did not create it"
    secret: String
    created: Boolean!
    generation: Int!
    "last four characters"
    hint: String!
    "when the previous secrets stop signing (rotation); null otherwise"
    previousExpiresAt: String
  }

  "A redrive: exactly one of deliveryId or status (only failed) with since / limit."
  input RedriveInput {
    deliveryId: String
    status: String
    since: String
    limit: Int
  }

  extend type Query {
    "the delivery log of an app environment, newest first (the adapter's utility route, operators)"
    deliveries(appDid: ID!, environment: String!, status: String, limit: Int = ${DEFAULT_LIST_LIMIT}): [Delivery!]!
    "operators: one delivery"
    delivery(id: ID!): Delivery
  }

  extend type Mutation {
    "a new app.webhook.test delivery, queued at once (the adapter's test-event route)"
    createTestDelivery(appDid: ID!, environment: String!): Delivery!
    "puts failed (or delivered) deliveries back on the queue; a delivery already queued is not queued twice"
    redriveDeliveries(appDid: ID!, environment: String!, input: RedriveInput!): RedriveResult!
    "creates the app environment's first signing secret unless it has one (the apps domain, in updateAppConfig, which asks until the app has it; operators)"
    ensureSigningSecret(appDid: ID!, environment: String!): SigningSecretIssued!
    "operators: a new signing secret; the previous ones keep signing for overlapSeconds (default 86400, at most 604800)"
    rotateSigningSecret(appDid: ID!, environment: String!, overlapSeconds: Int): SigningSecretIssued!
  }
`
