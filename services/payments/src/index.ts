export { startPaymentsService, connectPayments, DEFAULT_SWEEP_INTERVAL_MS, type PaymentsServiceOptions } from './server'
export * from './models'
export { typeDefs } from './schema'
export { resolvers, type PaymentsContext } from './resolvers'
export type { PaymentsDomain } from './domain/context'
export {
  initiateCheckout,
  getPaymentStatus,
  getCheckout,
  payCheckout,
  cancelCheckout,
  toCheckoutView,
  type CheckoutAuthorization,
  type CheckoutStarted,
  type CheckoutView,
  type PaymentRef,
  type PaymentStatusView,
} from './domain/checkouts'
export { finishSettlement, recoverCheckout, sweepCheckouts, STALE_PAYMENT_CLAIM_MS, type SweepResult } from './domain/settlement'
export { computeCharges, basisPoints, type Charges, type ServiceFeeRate } from './domain/fees'
export { deriveToken, hashToken, STATUS_TOKEN_RE, BROWSER_TOKEN_RE } from './domain/tokens'
export { validateCard, luhnValid, type CardInput } from './domain/card'
export { buildPaymentRecord, findPaymentRecord, paymentRecordUri, PAYMENT_RECORD_COLLECTION, type PaymentRecordValue, type PaymentRecordView } from './domain/payment-records'
export { registerCreatorProof, declinePaymentRecord, type CreatorProofView, type DeclinedRecordView } from './domain/proofs'
export { registerAppLink, type AppLinkView } from './domain/app-links'
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
