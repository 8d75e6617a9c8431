export { startEventsService, type EventsServiceOptions } from './server'
export * from './models'
export { typeDefs } from './schema'
export { resolvers, type EventsContext } from './resolvers'
export type { EventsDomain } from './domain/context'
export { createDelivery, deliveryJob, enqueueDelivery, requeueLostDelivery, DELIVERY_JOB_OPTIONS, type NewDelivery } from './domain/deliveries'
export {
  ensureSigningSecret,
  rotateSigningSecret,
  activeSigningSecrets,
  encryptSecret,
  decryptSecret,
  readSigningSecret,
  reencryptSigningSecrets,
  generateSigningSecret,
  DEFAULT_OVERLAP_SECONDS,
  MAX_OVERLAP_SECONDS,
  type SigningSecretIssued,
  type ReencryptionReport,
  type WebhookSecretKeys,
} from './domain/signing-secrets'
export { LOG_PAGE_SIZE, logCounterKey, logPageKey, logPageNumber, newestByPages, type DeliveryLogStore } from './domain/delivery-log-pages'
export { API_VERSION, DELIVERY_ID_RE, TEST_EVENT_TYPE, deliveryIdForEvent, newDeliveryId, serializeEnvelope, type Envelope } from './domain/envelope'
export { ENDED_JOB_GRACE_MS, RECONCILE_PROGRESS_EVERY, reconcileDeliveries, type ReconcileProgress, type ReconcileResult } from './domain/reconcile'
export { MAX_ATTEMPTS, DELAYS_MS, JITTER, nextDelayMs, scheduleSpanMs, type ScheduleOptions } from './domain/schedule'
export { ALL_QUEUES, WEBHOOK_DELIVERIES_QUEUE, DOMAIN_EVENTS_QUEUE, EVENTS_MAINTENANCE_QUEUE, DELIVERY_BACKOFF, queuePrefix, type DeliveryJob } from './queues'
export { startEventWorkers, type EventWorkersOptions, type RunningEventWorkers } from './workers'
export { createDomainEventProcessor } from './workers/domain-events'
export { HELD_TOO_LONG_ERROR, HOLD_RECHECK_MAX_FACTOR, holdRecheckDelayMs, settleAbandonedJob } from './delivery/processor'
export { releaseUnpausedHolds, type ReleaseHeldResult } from './delivery/release-held'
export { createEndpointClient, type EndpointClient } from './delivery/endpoint'
export { createTestDelivery } from './domain/test-delivery'
export { NOT_QUEUED, REDRIVE_CLAIM_TTL_SECONDS, REDRIVE_SETTLE_MS, STALE_CLAIM_MS, redriveClaimKey, redriveDeliveries } from './domain/redrive'
export { foldLegacyAttempts } from './models/legacy-attempts'
export { pruneTestDeliveries, TEST_DELIVERY_RETENTION_MS } from './domain/retention'
