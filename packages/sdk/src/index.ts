/**
 * @svc/sdk: the TypeScript client for app backends.
 *
 *   const client = createSvcClient({ baseUrl, appDid, serviceDid, privateKeyHex, alg: 'ES256K' })
 *   const config = await client.getConfig({ environment: 'test' })
 *   await client.requestRecipientApproval({ recipientDid, environment: 'test', paymentTypes: ['tip'] })   // creator accepts
 *   if (isConnectionReady(await client.getRecipientApproval({ recipientDid, environment: 'test' }))) { ...checkout }
 *   const { token, url } = await initiateCheckout(client, buildProduct({ ... }))   // persist token, redirect to url
 *   const { status, ref } = await pollPaymentStatus(client, token, { timeoutMs: 15 * 60_000 })
 *   const onWebhook = createWebhookRequestHandler({ secret, store, handlers })   // receiving events (src/receiver)
 *   await client.claimFreeTicket({ eventUri, ticketTypeId, buyerDid, idempotencyKey, buyerAssertionJwt })   // tickets
 *   const dev = createDeveloperClient({ checkoutUrl, appDid, apiKey })   // test events, the delivery log, redrives
 */

export { API_VERSION, SDK_VERSION } from './version'

export {
  createSvcClient,
  type CallArg,
  type CallOptions,
  type MethodNsid,
  type Methods,
  type SigningKeypair,
  type SvcClient,
  type SvcClientOptions,
} from './client'
export { isConnectionReady, type RecipientConnection } from './approvals'
export {
  createDeveloperClient,
  type DeliveryLogEntry,
  type DeliveryStatus,
  type DeveloperClient,
  type DeveloperClientOptions,
  type DeveloperConfig,
  type RedriveResult,
  type TestEventResult,
} from './developer'
export { mintAssertion } from './tickets'
export { PollTimeoutError, REQUEST_ID_HEADER, SvcError, isTransientError, isTransientStatus, parseRetryAfter } from './errors'
export {
  TERMINAL_PAYMENT_STATUSES,
  buildProduct,
  initiateCheckout,
  pollPaymentStatus,
  sleep,
  type BackoffOptions,
  type InitiateCheckoutOptions,
  type InitiateOutput,
  type PaymentStatusOutput,
  type PollPaymentStatusOptions,
} from './payments'
export * from '@svc/lexicons/types'
export * from './receiver'
export {
  InvalidProductError,
  PRODUCT_PREFIX,
  MAX_PRODUCT_LENGTH,
  PAYMENT_TYPES,
  CADENCES,
  parseProduct,
  type CheckoutProduct,
  type Cadence,
  type PaymentType,
} from '@svc/checkout-product'
export { ENVIRONMENTS, type Environment } from '@svc/vocabulary'
export { generateDidKeyKeypair, keypairFromPrivateKeyHex, type ServiceJwtAlg } from '@svc/service-auth'

