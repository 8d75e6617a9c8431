import gql from 'graphql-tag'

/**
 * Apollo Federation v1 SDL (composed by the mercurius gateway). The payments subgraph owns checkouts, their tokens,
 * payment records, creator-proof slots and catalog app links. It never reads the apps or actors collections: the
 * facts it decides on (an app's environment, fee rates and origin, its approval by a recipient, the recipient's payout
 * readiness) it reads itself through the graph, as the service `payments` (graph-facts.ts), and applies the rules.
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
    "why it failed, only when failed: declined | expired | canceled | processor_error | too_many_attempts | not_authorized"
    failureReason: String
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
    "a ticket checkout's hold (hold_…): its page shows the hold's tickets once paid"
    holdId: String
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

  input CardInput {
    number: String!
    expMonth: Int!
    expYear: Int!
    cvc: String!
    name: String
  }

  input RegisterCreatorProofInput {
    "the app's only configured environment when absent"
    environment: String
    paymentUri: String!
    recipientDid: String!
    proofUri: String!
    proofCid: String!
  }

  input DeclineRecordInput {
    "the app's only configured environment when absent"
    environment: String
    paymentUri: String!
    reason: String
  }

  input RegisterAppLinkInput {
    "the app's only configured environment when absent"
    environment: String
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

  "a ticket hold's checkout, as the tickets domain asks for it"
  input StartTicketCheckoutInput {
    appDid: ID!
    environment: String!
    "the hold (hold_…): the checkout's key, so a repeat gets the same checkout"
    holdId: ID!
    "the recipient: the event's organizer"
    organizerDid: String!
    description: String!
    "the hold's price in integer minor units"
    amount: Int!
    "how many tickets the hold sells: the flat ticket fee is per ticket (absent: 1)"
    tickets: Int
    currency: String!
    "the hold's expiry: the checkout expires with it"
    expiresAt: String!
    "absent: the checkout page itself"
    returnUrl: String
    cancelUrl: String
  }

  extend type Mutation {
    "app: start a hosted checkout (idempotent by app order id)"
    initiateCheckout(product: String!): CheckoutStarted!
    "the tickets domain: start (or find again) a ticket hold's checkout"
    startTicketCheckout(input: StartTicketCheckoutInput!): CheckoutStarted!
    "the hosted checkout page: pay with a card"
    payCheckout(browserToken: String!, card: CardInput!): CheckoutView!
    "the hosted checkout page: the buyer cancels"
    cancelCheckout(browserToken: String!): CheckoutView!
    "the hosted checkout page: too many pay attempts (card testing); the checkout fails as too_many_attempts"
    lockCheckout(browserToken: String!): CheckoutView!
    "app: register the creator's proof of a payment (the recipient must have delegated it to the app)"
    registerCreatorProof(input: RegisterCreatorProofInput!): CreatorProof!
    "app: decline the creator-proof slot of a payment"
    declinePaymentRecord(input: DeclineRecordInput!): DeclinedRecord!
    "app: the private fulfillment link of a catalog record on the app's registered origin"
    registerAppLink(input: RegisterAppLinkInput!): AppLink!
  }
`
