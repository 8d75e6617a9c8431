/**
 * The whole service in one test process, on loopback ports: the apps, actors, payments, events and tickets subgraphs on the test
 * FerretDB (one database of the stack's own), the mercurius gateway composing both, and the XRPC adapter's two hosts, with Redis under the test
 * file's own key prefix. Real HTTP between every piece.
 */
import Redis from 'ioredis'
import pino, { type Logger } from 'pino'
import { randomBytes } from 'node:crypto'
import { connectActors, startActorsService, upsertActor, type ActorsModels, type ActorView, type PayoutStatus } from '@svc/actors'
import { connectApps, registerApp, issueApiKey, startAppsService, type AppsModels } from '@svc/apps'
import { connectPayments, startPaymentsService, type PaymentsModels } from '@svc/payments'
import { connectEvents, startEventsService, startEventWorkers, type DeliveryLogStore, type EventsModels, type RunningEventWorkers } from '@svc/events'
import { connectTickets, createRedisSeatMap, startTicketsService, type TicketsDomain, type TicketsModels } from '@svc/tickets'
import { loggerOptions, type AdapterLimits, type Config, type DeliverySettings, type TrustProxy } from '@svc/config'
import { createMetrics, type ProcessMetrics } from '@svc/operations'
import { buildGateway } from '@svc/gateway'
import { buildApiServer, buildCheckoutServer, LISTEN_BACKLOG } from '@svc/xrpc-adapter'
import { createGatewayClient } from '@svc/gateway-client'
import { createDashboardSessions, DASHBOARD_COOKIE, signInUrl } from '@svc/dashboard-session'
import { createServiceAuthVerifier, generateDidKeyKeypair, keypairFromPrivateKeyHex, mintServiceJwt, type ServiceJwtAlg } from '@svc/service-auth'
import { isolate, reservePort, testCallerKeys } from '@svc/testing'
import type { Environment } from '@svc/vocabulary'

export interface TestStack {
  /** the stack's own database on the test FerretDB */
  mongoUrl: string
  apiUrl: string
  checkoutUrl: string
  gatewayUrl: string
  appsSubgraphUrl: string
  actorsSubgraphUrl: string
  paymentsSubgraphUrl: string
  eventsSubgraphUrl: string
  ticketsSubgraphUrl: string
  serviceDid: string
  secrets: Config['secrets']
  models: AppsModels
  /** the actors subgraph's models, on the same database */
  actors: ActorsModels
  /** the payments subgraph's models, on the same database */
  payments: PaymentsModels
  /** the events subgraph's models, on the same database */
  events: EventsModels
  /** what writes deliveries (createDelivery): the events models with the stack's Redis, which numbers the delivery log */
  deliveryLog: DeliveryLogStore
  /** the tickets subgraph's models, on the same database */
  tickets: TicketsModels
  /** the tickets domain as the stack's tickets process has it (its models and seat map), for calling domain functions */
  ticketsDomain: TicketsDomain
  /** the delivery settings the stack's workers use (StackOptions.delivery over test defaults) */
  delivery: DeliverySettings
  /** starts (more) event workers in this process; the stack stops them */
  /** more events workers, with delivery settings of their own; `logger` and `metrics` for a test that reads them */
  startWorkers(delivery?: Partial<DeliverySettings>, with_?: { logger?: Logger; metrics?: ProcessMetrics }): Promise<RunningEventWorkers>
  /** the environment of a separate worker process of this stack (`tsx services/events/src/workers/main.ts`) */
  workerEnv(delivery?: Partial<DeliverySettings>): Record<string, string>
  redis: Redis
  /** the stack's Redis URL and key prefix (what REDIS_URL and REDIS_PREFIX would be for a process of this stack) */
  redisUrl: string
  redisPrefix: string
  /** registers a fresh did:key app for an environment and returns what a developer would hold */
  newApp(opts?: { environments?: (Environment)[]; alg?: ServiceJwtAlg; appUrl?: string }): Promise<TestApp>
  /** creates an actor (a fresh did:plc-style DID unless given) in one environment; a creator, payout status onboarding-required unless given */
  newActor(opts: NewActorOptions): Promise<ActorView>
  /** a single-use dashboard sign-in link for an actor (what the operator command prints) */
  dashboardLoginUrl(actorDid: string, environment: Environment): Promise<string>
  /** a signed-in dashboard session for an actor, as a `Cookie` header value */
  dashboardCookie(actorDid: string, environment: Environment): Promise<string>
  stop(): Promise<void>
}

export interface NewActorOptions {
  did?: string
  environment: Environment
  payoutStatus?: PayoutStatus
  displayName?: string | null
  kind?: 'creator' | 'project'
  paymentTypes?: string[]
}

export interface TestApp {
  did: string
  jwt(lxm: string, opts?: { aud?: string; expiresInSeconds?: number }): Promise<string>
  apiKey(environment: Environment, permissions?: string[]): Promise<string>
}

export interface StackOptions {
  allowLoopbackWebhooks?: boolean
  methods?: Parameters<typeof buildApiServer>[0]['methods']
  /** seconds before an abandoned checkout expires (default 24 h) */
  checkoutExpirySeconds?: number
  /** the test processor's wait before it charges (TEST_PROCESSOR_LATENCY_MS, default 0) */
  testProcessorLatencyMs?: number
  /** how long the gateway waits for a subgraph (SUBGRAPH_TIMEOUT_MS, default 30 s) */
  subgraphTimeoutMs?: number
  /** start the event workers in this process (default true); false: the test runs its own */
  workers?: boolean
  /** delivery settings over the test defaults (schedule at 1/50 000, 1 s locks, 200 ms hold rechecks, 2 s timeout) */
  delivery?: Partial<DeliverySettings>
  /** the service DID is the did:key of its signing key, so app receivers can verify its service-auth offline */
  serviceDidFromSigningKey?: boolean
  /** how often the outbox relays poll (they are also woken by writes in their own process) */
  relayIntervalMs?: number
  /** the adapter's rate limits and card-testing counts over the test defaults (high enough for every other test) */
  limits?: Partial<AdapterLimits>
  /** the PLC directory the adapter's service-auth asks (default: an address that refuses connections) */
  plcUrl?: string
  /** the adapter's TRUST_PROXY (default none) */
  trustProxy?: TrustProxy
  /** every process's log lines, at debug level, are pushed here (default: no logs, unless TEST_LOG_LEVEL says) */
  logs?: string[]
}

export const TEST_LIMITS: AdapterLimits = {
  xrpc: { max: 100_000, windowMs: 60_000 },
  issuerLookupsPerAddress: { max: 100_000, windowMs: 60_000 },
  utility: { max: 100_000, windowMs: 60_000 },
  requestTimeoutMs: 30_000,
  payAttemptsPerCheckout: 5,
  payAttemptsPerAddress: { max: 100_000, windowMs: 3_600_000 },
}

/** appCacheMs 0: tests change an app's channel and secrets directly and expect the next attempt to see it */
export const TEST_DELIVERY: DeliverySettings = { timeoutMs: 2000, scheduleScale: 1 / 50_000, holdRecheckMs: 200, holdMaxMs: 3 * 24 * 3_600_000, lockMs: 1000, concurrency: 10, appCacheMs: 0, reconcileMs: 60_000, disableAfterMs: 5 * 24 * 3_600_000, slowMs: 1000, slowAppConcurrency: 10 }

export async function startStack(label: string, opts: StackOptions = {}): Promise<TestStack> {
  const iso = isolate(label)
  const logs = opts.logs
  // with the processes' own options (their redaction included), as runProcess makes their loggers
  const logger = logs ? pino(loggerOptions({ logLevel: 'debug' }, 'stack'), { write: (line: string) => void logs.push(line) }) : pino(loggerOptions({ logLevel: (process.env.TEST_LOG_LEVEL ?? 'silent') as 'silent' }, 'stack'))
  const secrets = {
    callerKeys: testCallerKeys(),
    operatorToken: randomBytes(32).toString('hex'),
    metricsToken: randomBytes(32).toString('hex'),
    paymentTokens: randomBytes(32).toString('hex'),
    previousPaymentTokens: null,
    previousWebhookSecretKey: null,
    webhookSecretKey: randomBytes(32).toString('hex'),
    serviceSigningKey: randomBytes(32).toString('hex'),
  }
  const serviceDid = opts.serviceDidFromSigningKey
    ? (await keypairFromPrivateKeyHex(secrets.serviceSigningKey, 'ES256K')).did()
    : 'did:web:svc.test'
  const delivery: DeliverySettings = { ...TEST_DELIVERY, ...opts.delivery }
  const relay = { redisUrl: iso.redisUrl, redisPrefix: iso.redisPrefix, intervalMs: opts.relayIntervalMs ?? 200 }
  // The adapter's two hosts get their ports first: the subgraphs hand out URLs on them (checkout, dashboard).
  // So does the gateway's: the apps and payments subgraphs read other domains through it.
  // Each is held until its server listens, so no server started meanwhile on port 0 is given it.
  const [api, checkoutHost, gatewayHost] = [await reservePort(), await reservePort(), await reservePort()]
  const [apiPort, checkoutPort, gatewayPort] = [api.port, checkoutHost.port, gatewayHost.port]
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}/graphql`
  const checkoutUrl = `http://127.0.0.1:${checkoutPort}`
  const apps = await startAppsService({
    mongoUrl: iso.mongoUrl,
    metricsToken: secrets.metricsToken,
    databaseCommandMetrics: true,
    callerKeys: secrets.callerKeys,
    gatewayUrl,
    host: '127.0.0.1',
    port: 0,
    logger,
    allowLoopbackWebhooksInTest: opts.allowLoopbackWebhooks ?? false,
    dashboardUrl: `${checkoutUrl}/dashboard`,
    relay,
  })
  const actors = await startActorsService({ mongoUrl: iso.mongoUrl, callerKeys: secrets.callerKeys, host: '127.0.0.1', port: 0, logger, metricsToken: secrets.metricsToken, databaseCommandMetrics: true })
  const payments = await startPaymentsService({
    mongoUrl: iso.mongoUrl,
    metricsToken: secrets.metricsToken,
    databaseCommandMetrics: true,
    callerKeys: secrets.callerKeys,
    gatewayUrl,
    host: '127.0.0.1',
    port: 0,
    logger,
    serviceDid,
    checkoutUrl,
    tokenSecret: secrets.paymentTokens,
    checkoutExpirySeconds: opts.checkoutExpirySeconds ?? 24 * 3600,
    liveProcessor: 'none',
    testProcessorLatencyMs: opts.testProcessorLatencyMs,
    sweepIntervalMs: 0,
    relay,
  })
  const events = await startEventsService({
    mongoUrl: iso.mongoUrl,
    metricsToken: secrets.metricsToken,
    databaseCommandMetrics: true,
    callerKeys: secrets.callerKeys,
    host: '127.0.0.1',
    port: 0,
    logger,
    redisUrl: iso.redisUrl,
    redisPrefix: iso.redisPrefix,
    secretKey: secrets.webhookSecretKey,
  })
  const tickets = await startTicketsService({
    mongoUrl: iso.mongoUrl,
    metricsToken: secrets.metricsToken,
    databaseCommandMetrics: true,
    callerKeys: secrets.callerKeys,
    gatewayUrl,
    checkoutUrl,
    host: '127.0.0.1',
    port: 0,
    logger,
    relay,
    sweepIntervalMs: 0,
  })
  const gateway = await buildGateway({
    services: [
      { name: 'apps', url: apps.url },
      { name: 'actors', url: actors.url },
      { name: 'payments', url: payments.url },
      { name: 'events', url: events.url },
      { name: 'tickets', url: tickets.url },
    ],
    secrets,
    graphiql: false,
    logger,
    subgraphTimeoutMs: opts.subgraphTimeoutMs,
  })
  await gatewayHost.release()
  await gateway.listen({ host: '127.0.0.1', port: gatewayPort })
  const redis = new Redis(iso.redisUrl, { lazyConnect: false })
  const gatewayClient = createGatewayClient({ url: gatewayUrl, signer: { issuer: 'xrpc-adapter', key: secrets.callerKeys['xrpc-adapter'] } })
  const serviceAuth = createServiceAuthVerifier({ serviceDid, plcUrl: opts.plcUrl ?? 'http://127.0.0.1:1', redis, replayKeyPrefix: `${iso.redisPrefix}jti:` })
  const dashboardSessions = createDashboardSessions({ redis, prefix: `${iso.redisPrefix}dash:` })
  const limits: AdapterLimits = { ...TEST_LIMITS, ...opts.limits }
  const deps = {
    logger,
    gateway: gatewayClient,
    serviceAuth,
    methods: opts.methods,
    dashboardSessions,
    checkoutUrl,
    redis,
    redisPrefix: iso.redisPrefix,
    limits,
    trustProxy: opts.trustProxy,
    metrics: createMetrics('xrpc-adapter'),
    metricsToken: secrets.metricsToken,
    databaseCommandMetrics: true,
  }
  const apiServer = await buildApiServer(deps)
  const checkout = await buildCheckoutServer(deps)
  await checkoutHost.release()
  await checkout.listen({ host: '127.0.0.1', port: checkoutPort, backlog: LISTEN_BACKLOG })
  await api.release()
  await apiServer.listen({ host: '127.0.0.1', port: apiPort, backlog: LISTEN_BACKLOG })
  const { conn, models } = await connectApps(iso.mongoUrl)
  const actorsDb = await connectActors(iso.mongoUrl)
  const paymentsDb = await connectPayments(iso.mongoUrl)
  const eventsDb = await connectEvents(iso.mongoUrl)
  const ticketsDb = await connectTickets(iso.mongoUrl)
  const ticketsSeatMap = createRedisSeatMap({ redisUrl: iso.redisUrl, redisPrefix: iso.redisPrefix })
  const allowLoopbackWebhooks = opts.allowLoopbackWebhooks ?? false
  const workers: RunningEventWorkers[] = []
  const startWorkers = async (overrides: Partial<DeliverySettings> = {}, with_: { logger?: Logger; metrics?: ProcessMetrics } = {}) => {
    const running = await startEventWorkers({
      mongoUrl: iso.mongoUrl,
      redisUrl: iso.redisUrl,
      redisPrefix: iso.redisPrefix,
      logger: with_.logger ?? logger,
      ...(with_.metrics ? { metrics: with_.metrics } : {}),
      gateway: { url: gatewayUrl, key: secrets.callerKeys.events },
      serviceDid,
      serviceSigningKey: secrets.serviceSigningKey,
      secretKey: secrets.webhookSecretKey,
      delivery: { ...delivery, ...overrides },
      allowLoopbackWebhooks,
    })
    workers.push(running)
    return running
  }
  if (opts.workers !== false) await startWorkers()

  return {
    mongoUrl: iso.mongoUrl,
    apiUrl: `http://127.0.0.1:${apiPort}`,
    checkoutUrl,
    gatewayUrl,
    appsSubgraphUrl: apps.url,
    actorsSubgraphUrl: actors.url,
    paymentsSubgraphUrl: payments.url,
    eventsSubgraphUrl: events.url,
    ticketsSubgraphUrl: tickets.url,
    serviceDid,
    secrets,
    models,
    actors: actorsDb.models,
    payments: paymentsDb.models,
    events: eventsDb.models,
    deliveryLog: { models: eventsDb.models, redis, redisPrefix: iso.redisPrefix },
    tickets: ticketsDb.models,
    ticketsDomain: { models: ticketsDb.models, seatMap: ticketsSeatMap },
    delivery,
    startWorkers,
    workerEnv: (overrides = {}) => {
      const d = { ...delivery, ...overrides }
      return {
        NODE_ENV: 'test',
        LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
        MONGO_URL: iso.mongoUrl,
        REDIS_URL: iso.redisUrl,
        REDIS_PREFIX: iso.redisPrefix,
        GATEWAY_URL: gatewayUrl,
        EVENTS_CONTEXT_KEY: secrets.callerKeys.events,
        SERVICE_DID: serviceDid,
        SERVICE_SIGNING_KEY: secrets.serviceSigningKey,
        WEBHOOK_SECRET_KEY: secrets.webhookSecretKey,
        DEV_ALLOW_LOOPBACK_WEBHOOKS: String(allowLoopbackWebhooks),
        DELIVERY_TIMEOUT_MS: String(d.timeoutMs),
        DELIVERY_SCHEDULE_SCALE: String(d.scheduleScale),
        DELIVERY_HOLD_RECHECK_MS: String(d.holdRecheckMs),
        DELIVERY_HOLD_MAX_MS: String(d.holdMaxMs),
        DELIVERY_LOCK_MS: String(d.lockMs),
        DELIVERY_CONCURRENCY: String(d.concurrency),
        DELIVERY_APP_CACHE_MS: String(d.appCacheMs),
        DELIVERY_RECONCILE_MS: String(d.reconcileMs),
        DELIVERY_DISABLE_AFTER_MS: String(d.disableAfterMs),
        DELIVERY_SLOW_MS: String(d.slowMs),
        DELIVERY_SLOW_APP_CONCURRENCY: String(d.slowAppConcurrency),
        WORKERS_PORT: '0',
      }
    },
    redis,
    redisUrl: iso.redisUrl,
    redisPrefix: iso.redisPrefix,
    async newApp(o = {}) {
      const { did, keypair } = await generateDidKeyKeypair(o.alg ?? 'ES256K')
      for (const environment of o.environments ?? ['test']) {
        await registerApp({ models }, { did, environment, appUrl: o.appUrl ?? 'https://app.example.com', feeShareBps: 500, ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd' } })
      }
      return {
        did,
        jwt: (lxm, j = {}) => mintServiceJwt({ keypair, iss: did, aud: j.aud ?? serviceDid, lxm, expiresInSeconds: j.expiresInSeconds }),
        apiKey: async (environment, permissions = ['app.config.read']) => (await issueApiKey({ models }, { appDid: did, environment, permissions })).key,
      }
    },
    async dashboardLoginUrl(actorDid, environment) {
      const { token } = await dashboardSessions.issueLoginLink({ actorDid, environment })
      return signInUrl(`${checkoutUrl}/dashboard`, token)
    },
    async dashboardCookie(actorDid, environment) {
      const { cookie } = await dashboardSessions.createSession({ actorDid, environment })
      return `${DASHBOARD_COOKIE}=${cookie}`
    },
    newActor: (o) =>
      upsertActor({ models: actorsDb.models }, {
        did: o.did ?? `did:plc:${randomBytes(12).toString('hex')}`,
        environment: o.environment,
        kind: o.kind,
        displayName: o.displayName,
        paymentTypes: o.paymentTypes,
        payoutStatus: o.payoutStatus,
      }),
    async stop() {
      await Promise.allSettled(workers.map((w) => w.stop()))
      await Promise.allSettled([apiServer.close(), checkout.close()])
      await gatewayClient.close()
      await gateway.close()
      await apps.stop()
      await actors.stop()
      await payments.stop()
      await events.stop()
      await tickets.stop()
      await eventsDb.conn.close()
      await ticketsDb.conn.close()
      await ticketsSeatMap.close()
      await actorsDb.conn.close()
      await paymentsDb.conn.close()
      await conn.dropDatabase().catch(() => undefined)
      await conn.close()
      const keys = await redis.keys(`${iso.redisPrefix}*`)
      if (keys.length) await redis.del(...keys)
      redis.disconnect()
    },
  }
}
