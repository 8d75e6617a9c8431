import gql from 'graphql-tag'

/**
 * Apollo Federation v1 SDL (composed by the mercurius gateway). The payments subgraph owns checkouts, their tokens,
 * payment records, creator-proof slots and catalog app links. It does not read the apps or actors collections: the
 * caller (the XRPC adapter, through the gateway) passes the facts the apps and actors subgraphs established as
 * `CheckoutAuthorizationInput`, and this subgraph applies the rules.
 *
 * Principals: app operations take the app from the signed context (`app`); the hosted checkout page is the service
 * principal named `checkout`; operators may read. Anyone else: NotAllowed.
 */
export const typeDefs = gql`
  type PaymentRef {
    "AT-URI of the payment record"
    uri: String!
    "CID of the record's DAG-CBOR encoding"
    cid: String!
  }

  type PaymentStatus {
    "pending | processing | completed | failed"
    status: String!
    "once a payment record exists"
    ref: PaymentRef
  }

  type CheckoutStarted {
    "the app's status token (pst_<env>_…)"
    token: String!
    "the buyer's hosted checkout page: {checkout_url}/checkout/<browser token>"
    url: String!
    checkoutId: ID!
  }

  type CheckoutView {
    id: ID!
    environment: String!
    "pending | processing | completed | failed"
    status: String!
    "declined | expired | canceled | processor_error, when failed"
    failureReason: String
    "text for the buyer, e.g. Your card was declined."
    failureMessage: String
    recipientDid: String!
    recipientName: String
    paymentType: String!
    description: String!
    currency: String!
    "integer minor units"
    amount: Int!
    serviceFee: Int!
    "the part of the service fee the buyer pays (0 unless the app passes it on)"
    buyerFee: Int!
    "amount + buyerFee"
    total: Int!
    returnUrl: String!
    cancelUrl: String!
    expiresAt: String!
    ref: PaymentRef
  }

  type CreatorProof {
    paymentUri: String!
    proofUri: String!
    proofCid: String!
    "registered"
    status: String!
    registeredAt: String!
  }

  type DeclinedRecord {
    paymentUri: String!
    "declined"
    status: String!
    declinedAt: String!
  }

  type AppLink {
    "alk_…"
    id: ID!
    recordUri: String!
    fulfillmentUrl: String!
    label: String
    environment: String!
    createdAt: String!
  }

  type ProofSlot {
    "pending | registered | declined"
    status: String!
    proofUri: String
    proofCid: String
    "when the slot was registered or declined"
    at: String
  }

  "A payment record with its proof slot (operators)."
  type PaymentRecord {
    uri: String!
    cid: String!
    "the record's $type: money.svc.payment.record"
    recordType: String!
    checkoutId: ID!
    environment: String!
    app: String!
    recipient: String!
    paymentType: String!
    amount: Int!
    currency: String!
    serviceFee: Int!
    buyerFee: Int!
    appFee: Int!
    total: Int!
    appOrderId: String!
    processor: String!
    createdAt: String!
    proof: ProofSlot!
  }

  input ServiceFeeInput {
    bps: Int!
    flatAmount: Int!
    flatCurrency: String!
    passToBuyer: Boolean!
  }

  input ApprovalFactsInput {
    id: String!
    status: String!
    paymentTypes: [String!]!
    feeShareBps: Int!
  }

  input RecipientFactsInput {
    did: String!
    displayName: String
    payable: Boolean!
    payoutStatus: String!
  }

  input CheckoutAuthorizationInput {
    "already resolved by the apps subgraph for this app"
    environment: String!
    "the app's platform fee rates in that environment"
    serviceFee: ServiceFeeInput!
    "the app's approval by the recipient; null when none"
    approval: ApprovalFactsInput
    "the recipient actor; null when unknown"
    recipient: RecipientFactsInput
  }

  input CardInput {
    number: String!
    expMonth: Int!
    expYear: Int!
    cvc: String!
    name: String
  }

  input RegisterCreatorProofInput {
    environment: String!
    paymentUri: String!
    recipientDid: String!
    proofUri: String!
    proofCid: String!
  }

  input DeclineRecordInput {
    environment: String!
    paymentUri: String!
    reason: String
  }

  input RegisterAppLinkInput {
    environment: String!
    recordUri: String!
    fulfillmentUrl: String!
    label: String
  }

  extend type Query {
    "app (its own checkouts) and operators: the status of a checkout by its status token"
    paymentStatus(token: String!): PaymentStatus!
    "the hosted checkout page (service 'checkout') and operators: a checkout by its browser token"
    checkout(browserToken: String!): CheckoutView!
    "operators: a payment record by URI in an environment"
    paymentRecord(uri: String!, environment: String!): PaymentRecord
  }

  extend type Mutation {
    "app: start a hosted checkout (idempotent by app order id)"
    initiateCheckout(product: String!, authorization: CheckoutAuthorizationInput!): CheckoutStarted!
    "the hosted checkout page: pay with a card"
    payCheckout(browserToken: String!, card: CardInput!): CheckoutView!
    "the hosted checkout page: the buyer cancels"
    cancelCheckout(browserToken: String!): CheckoutView!
    "app: register the creator's proof of a payment (delegated: the recipient delegated it to the app)"
    registerCreatorProof(input: RegisterCreatorProofInput!, delegated: Boolean!): CreatorProof!
    "app: decline the creator-proof slot of a payment"
    declinePaymentRecord(input: DeclineRecordInput!): DeclinedRecord!
    "app: the private fulfillment link of a catalog record (recordKnown: the record's repository is a known actor)"
    registerAppLink(input: RegisterAppLinkInput!, appOrigin: String!, recordKnown: Boolean!): AppLink!
  }
`
