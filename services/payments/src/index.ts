export { startPaymentsService, type PaymentsServiceOptions } from './server'
export { DEFAULT_SWEEP_INTERVAL_MS } from './sweeper'
export * from './models'
export { typeDefs } from './schema'
export { resolvers, type PaymentsContext } from './resolvers'
export type { PaymentsDomain, ServingPayments } from './domain/context'
export type { AppFacts, CheckoutFacts } from './domain/app-facts'
export { createGraphFacts } from './graph-facts'
export { initiateCheckout, type CheckoutStarted } from './domain/initiate-checkout'
export { getPaymentStatus, type PaymentStatusView } from './domain/payment-status'
export { getCheckout, toCheckoutView, type CheckoutView, type PaymentRef } from './domain/checkout-view'
export { payCheckout } from './domain/pay-checkout'
export { cancelCheckout, lockCheckout } from './domain/close-checkout'
export { chargeKeyOf, finishSettlement, recoverCheckout, UNANSWERED_PAYMENT_CLAIM_MS } from './domain/settlement'
export { sweepCheckouts, type SweepCursor, type SweepResult } from './domain/sweep-checkouts'
export { computeCharges, basisPoints, type Charges, type ServiceFeeRate } from './domain/fees'
export { deriveToken, hashToken, STATUS_TOKEN_RE, BROWSER_TOKEN_RE } from './domain/tokens'
export { validateCard, luhnValid, type CardInput } from './domain/card'
export { buildPaymentRecord, findPaymentRecord, paymentRecordUri, PAYMENT_RECORD_COLLECTION, type PaymentRecordValue, type PaymentRecordView } from './domain/payment-records'
export { registerCreatorProof, declinePaymentRecord, type CreatorProofView, type DeclinedRecordView } from './domain/proofs'
export { registerAppLink, CATALOG_COLLECTIONS, type AppLinkView } from './domain/app-links'
export {
  ProcessorRegistry,
  TestProcessor,
  TEST_CARDS,
  createProcessorRegistry,
  type PaymentProcessor,
  type ChargeRequest,
  type ChargeResult,
  type Card,
} from './processors'
