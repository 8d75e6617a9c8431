/**
 * The events workers (their own process: workers/main.ts; in-process in the test stack): the `domain-events`
 * consumer that turns domain events into deliveries, and the `webhook-deliveries` worker that sends them.
 *
 * Delivery jobs hold a lock of `delivery.lockMs`; a worker that dies mid-attempt loses it, and the stalled check
 * (every lockMs, up to 5 times per job) hands the job to another worker, which marks the dead attempt `interrupted`
 * in the delivery's log and sends again with the same delivery id (docs/events.md, "Crash safety").
 */
import { Queue, Worker, type Job } from 'bullmq'
import Redis from 'ioredis'
import type { Logger } from 'pino'
import type { DeliverySettings } from '@svc/config'
import type { DomainEventJob } from '@svc/outbox'
import { collectedGauge, counter, LONG_WAIT_SECONDS, logRedisOutage, observeDatabaseCommands, secondsHistogram, type ProcessMetrics } from '@svc/operations'
import { keypairFromPrivateKeyHex } from '@svc/service-auth'
import { watchDatabase, whileDatabaseAway } from '@svc/subgraph-server'
import { cachedEndpoints, cachedSigningSecrets } from '../delivery/app-environment-cache'
import { createEndpointClient } from '../delivery/endpoint'
import { createEndpointHealth } from '../delivery/endpoint-health'
import { AttemptFailedError, createDeliveryProcessor, deliveryBackoff, failedPickUpOutcome, settleAbandonedJob, type DeliveryProcessorDeps } from '../delivery/processor'
import { createDeliveryAgent } from '../delivery/transport'
import { activeSigningSecrets } from '../domain/signing-secrets'
import { longestWaitMs } from '../domain/schedule'
import { connectEvents } from '../models'
import { foldLegacyAttempts } from '../models/legacy-attempts'
import { ALL_QUEUES, DOMAIN_EVENTS_QUEUE, queuePrefix, WEBHOOK_DELIVERIES_QUEUE, type DeliveryJob } from '../queues'
import { createDomainEventProcessor } from './domain-events'
import { startReconciler } from './reconciler'

export interface EventWorkersOptions {
  mongoUrl: string
  redisUrl: string
  /** REDIS_PREFIX (BullMQ's prefix derives from it: queuePrefix) */
  redisPrefix: string
  logger: Logger
  /** the gateway, and the workers' own key (they call as the service `events`) */
  gateway: { url: string; key: string }
  /** iss of the XRPC channel's service-auth JWT */
  serviceDid: string
  /** SERVICE_SIGNING_KEY: hex secp256k1 private key */
  serviceSigningKey: string
  /** WEBHOOK_SECRET_KEY */
  secretKey: string
  /** WEBHOOK_SECRET_KEY_PREVIOUS, during that key's rotation: signing secrets still stored under it are read */
  previousSecretKey?: string | null
  delivery: DeliverySettings
  /** DEV_ALLOW_LOOPBACK_WEBHOOKS: loopback receivers in test */
  allowLoopbackWebhooks: boolean
  /** the process's metrics: queue depth, delivery job outcomes (docs/operations.md) */
  metrics?: ProcessMetrics
  /** DB_COMMAND_METRICS: database commands timed in the metrics too */
  databaseCommandMetrics?: boolean
}

export interface RunningEventWorkers {
  stop(): Promise<void>
  /** what the process's readiness asks: the database and Redis answer */
  ready(): Promise<void>
}

/** The job states a queue's depth is reported in. */
const QUEUE_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed'] as const

/** A job the stalled check gave up on (or that failed outside an attempt) must not stay `pending` in the log. */
const STALLED_MAX = 5

export async function startEventWorkers(opts: EventWorkersOptions): Promise<RunningEventWorkers> {
  const log = opts.logger
  const service = { did: opts.serviceDid, keypair: await keypairFromPrivateKeyHex(opts.serviceSigningKey, 'ES256K') }
  const { conn, models, clientOptions } = await connectEvents(opts.mongoUrl, { monitorCommands: Boolean(opts.metrics && opts.databaseCommandMetrics), logger: log })
  await whileDatabaseAway(() => foldLegacyAttempts(conn, models, log), { what: 'folding legacy delivery attempts', logger: log })
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: null })
  const prefix = queuePrefix(opts.redisPrefix)
  const deliveries = new Queue<DeliveryJob>(WEBHOOK_DELIVERIES_QUEUE, { connection: redis, prefix })
  const endpoints = cachedEndpoints(createEndpointClient({ url: opts.gateway.url, key: opts.gateway.key, logger: log }), opts.delivery.appCacheMs)
  const signingSecrets = cachedSigningSecrets(activeSigningSecrets.bind(null, models, { current: opts.secretKey, previous: opts.previousSecretKey ?? null }), opts.delivery.appCacheMs)
  const agents = {
    test: createDeliveryAgent({ environment: 'test', allowLoopbackInTest: opts.allowLoopbackWebhooks }, opts.delivery.timeoutMs),
    live: createDeliveryAgent({ environment: 'live', allowLoopbackInTest: false }, opts.delivery.timeoutMs),
  }

  const processDomainEvent = createDomainEventProcessor({ models, redis, redisPrefix: opts.redisPrefix, deliveries, logger: log.child({ worker: DOMAIN_EVENTS_QUEUE }) })
  const domainEvents = new Worker<DomainEventJob, string>(
    DOMAIN_EVENTS_QUEUE,
    processDomainEvent,
    // a dead worker's job comes back as soon as a delivery's would; the processor is idempotent, so picking a job up
    // again is harmless (one that still fails for good is retried by the reconciler)
    { connection: redis, prefix, concurrency: opts.delivery.concurrency, lockDuration: opts.delivery.lockMs, stalledInterval: opts.delivery.lockMs, maxStalledCount: STALLED_MAX },
  )

  // a domain event that could not become its delivery (each try, and the last): the board keeps the failed job
  domainEvents.on('failed', (job, err) => {
    if (!job) return
    const final = job.attemptsMade >= (job.opts.attempts ?? 1)
    log.child({ worker: DOMAIN_EVENTS_QUEUE }).warn({ err, jobId: job.id, eventId: job.data.eventId, appDid: job.data.appDid, attemptsMade: job.attemptsMade, final }, 'domain event failed')
  })

  const deliveryLog = log.child({ worker: WEBHOOK_DELIVERIES_QUEUE })
  const deferred = opts.metrics ? counter(opts.metrics, 'svc_delivery_deferred_total', "delivery pick-ups put back unsent: the receiver is slow and its attempts hold their share of the worker's slots", []) : null
  const deferredCount = deferred ? () => deferred.inc() : undefined
  const attemptSeconds = opts.metrics
    ? secondsHistogram(opts.metrics, 'svc_delivery_attempt_duration_seconds', 'delivery attempts sent, from the request to the receiver\'s answer (or the timeout)', ['channel', 'environment', 'outcome'] as const)
    : null
  const lateSeconds = opts.metrics
    ? secondsHistogram(opts.metrics, 'svc_delivery_attempt_lateness_seconds', 'delivery attempts sent, from when they were due to when they went out (waits on the app left out)', ['environment'] as const, LONG_WAIT_SECONDS)
    : null
  const attemptSent: DeliveryProcessorDeps['onAttemptSent'] =
    attemptSeconds && lateSeconds
      ? (at) => {
          attemptSeconds.observe({ channel: at.channel, environment: at.environment, outcome: at.delivered ? 'delivered' : 'failed' }, at.durationMs / 1000)
          if (at.lateMs !== null) lateSeconds.observe({ environment: at.environment }, at.lateMs / 1000)
        }
      : undefined
  const health = createEndpointHealth(redis, opts.redisPrefix, opts.delivery.disableAfterMs, longestWaitMs(opts.delivery.scheduleScale))
  const sender = new Worker<DeliveryJob, string>(
    WEBHOOK_DELIVERIES_QUEUE,
    createDeliveryProcessor({ models, logger: deliveryLog, delivery: opts.delivery, signingSecrets, service, endpoints, agents, health, onDeferred: deferredCount, onAttemptSent: attemptSent }),
    {
      connection: redis,
      prefix,
      concurrency: opts.delivery.concurrency,
      lockDuration: opts.delivery.lockMs,
      stalledInterval: opts.delivery.lockMs,
      maxStalledCount: STALLED_MAX,
      settings: { backoffStrategy: deliveryBackoff(opts.delivery.scheduleScale) },
    },
  )

  // The processor settles the delivery on its last attempt. A job that failed for good any other way (stalled too
  // often, an error outside an attempt on the last try) is settled here, so the log never shows it pending.
  sender.on('failed', (job: Job<DeliveryJob> | undefined, err: Error) => {
    if (!job || err instanceof AttemptFailedError) return
    if (job.attemptsMade < (job.opts.attempts ?? 1) && !/stalled/i.test(err.message)) return
    void settleAbandonedJob(models, job, err.message).catch((e: unknown) => deliveryLog.error({ err: e, deliveryId: job.data.deliveryId }, 'could not mark the delivery failed'))
    deliveryLog.error({ deliveryId: job.data.deliveryId, err }, 'delivery job failed outside an attempt')
  })
  const queues = opts.metrics ? ALL_QUEUES.map((name) => (name === WEBHOOK_DELIVERIES_QUEUE ? deliveries : new Queue(name, { connection: redis, prefix }))) : []
  /** counts the client's database commands for /metrics; again for a new client (watchDatabase) */
  const observeCommands = () => opts.metrics && opts.databaseCommandMetrics && observeDatabaseCommands(opts.metrics, conn.getClient())
  observeCommands()
  if (opts.metrics) {
    const metrics = opts.metrics
    collectedGauge(metrics, 'svc_queue_jobs', 'jobs in each queue, by state', ['queue', 'state'] as const, async (gauge) => {
      for (const queue of queues) {
        const counts = await queue.getJobCounts(...QUEUE_STATES)
        for (const state of QUEUE_STATES) gauge.set({ queue: queue.name, state }, counts[state] ?? 0)
      }
    })
    // an attempt is one of delivered / retrying / failed; the other outcomes are pick-ups that sent nothing
    const outcomes = counter(metrics, 'svc_delivery_jobs_total', 'delivery job pick-ups, by outcome', ['outcome'] as const)
    sender.on('completed', (_job, result: string) => outcomes.inc({ outcome: result }))
    // the run's last attempt throws LastAttemptFailedError, also when BullMQ counts attempts left (a dead worker's came first)
    sender.on('failed', (_job: Job<DeliveryJob> | undefined, err: Error) => outcomes.inc({ outcome: failedPickUpOutcome(err) }))
  }
  const database = watchDatabase(conn, opts.mongoUrl, { clientOptions, onReopen: observeCommands, logger: log })
  const domainEventsQueue = new Queue<DomainEventJob>(DOMAIN_EVENTS_QUEUE, { connection: redis, prefix })
  const reconciler = startReconciler({ models, deliveries, domainEvents: domainEventsQueue, processDomainEvent, endpoints, redis, prefix, periodMs: opts.delivery.reconcileMs, logger: log })
  logRedisOutage([domainEvents, sender], redis, log, 'events workers')
  log.info({ concurrency: opts.delivery.concurrency, lockMs: opts.delivery.lockMs, scheduleScale: opts.delivery.scheduleScale, appCacheMs: opts.delivery.appCacheMs, reconcileMs: opts.delivery.reconcileMs, disableAfterMs: opts.delivery.disableAfterMs }, 'events workers started')

  let stopping: Promise<void> | undefined
  return {
    async ready() {
      await Promise.all([conn.db!.admin().ping(), redis.ping()])
    },
    stop() {
      stopping ??= (async () => {
        database.stop()
        await Promise.allSettled([domainEvents.close(), sender.close(), reconciler.stop()])
        await Promise.allSettled([...new Set([deliveries, domainEventsQueue, ...queues])].map((q) => q.close()))
        await Promise.allSettled([endpoints.close(), agents.test.close(), agents.live.close()])
        await redis.quit().catch(() => redis.disconnect())
        await conn.close()
        log.info('events workers stopped')
      })()
      return stopping
    },
  }
}
