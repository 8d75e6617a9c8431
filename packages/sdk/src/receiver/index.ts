export {
  API_VERSION_HEADER,
  DELIVERY_ID_HEADER,
  EVENT_TYPES,
  ReceiverError,
  TEST_EVENT_TYPE,
  type EventEnvelope,
  type EventType,
  type HeadersLike,
  type ReceiverErrorCode,
} from './envelope'
export { DEFAULT_TOLERANCE_SECONDS, verifyWebhook, type VerifyWebhookOptions, type WebhookSecrets } from './verify'
export {
  DEFAULT_DONE_TTL_MS,
  createMemoryClaimStore,
  createMongoClaimStore,
  createRedisClaimStore,
  type ClaimCollection,
  type ClaimDocument,
  type ClaimState,
  type DeliveryClaimStore,
  type RedisEvalClient,
} from './stores'
export {
  DEFAULT_CLAIM_TTL_MS,
  RECEIVE_EVENT_NSID,
  createReceiveEventHandler,
  createWebhookRequestHandler,
  handleDelivery,
  type EventHandler,
  type EventHandlers,
  type HandleDeliveryOptions,
  type HandleDeliveryResult,
  type ReceiveEventHandlerOptions,
  type ReceiverResponse,
  type WebhookRequestHandlerOptions,
} from './handle'
