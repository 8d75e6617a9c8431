/**
 * Configuration: read from the environment once, validated with zod, and passed down.
 * No service process reads process.env elsewhere (the operator commands' DEBUG, tests and scripts do).
 */
import { isIP } from 'node:net'
import { ConnectionString } from 'mongodb-connection-string-url'
import pino, { type Logger } from 'pino'
import { z } from 'zod'
import { isDid } from '@svc/vocabulary'
import { ISSUERS, type CallerKeys, type Issuer } from '@svc/internal-context'

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''])
  .transform((v) => v === 'true' || v === '1' || v === 'yes')

/**
 * An empty (or blank) variable is an unset one, so its default applies: compose's `${X:-}` and an `X=` line in an env
 * file give the empty string, which a number would otherwise read as 0 (a random port; for a rate limit, none).
 */
const emptyAsUnset = <T extends z.ZodType>(schema: T) => z.preprocess((v) => (typeof v === 'string' && v.trim() === '' ? undefined : v), schema)

const port = (fallback: number) => emptyAsUnset(z.coerce.number().int().min(0).max(65535).default(fallback))

/** Secrets have development defaults so a fresh clone runs; production refuses to start without real ones. */
const DEV_SECRET = 'development-only-secret-do-not-use-in-production'
/** sha256('development-only-service-signing-key'): public, so production refuses it */
const DEV_SIGNING_KEY = 'c554a65626316040506b30d0daaaabc6ab78480c5ca0afb1366f4166ed32304e'

/** secp256k1's order: a private key is a number from 1 to one below it */
const SECP256K1_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
const isSecp256k1PrivateKey = (hex: string): boolean => {
  const k = BigInt(`0x${hex}`)
  return k > 0n && k < SECP256K1_ORDER
}

/** the development service DID: production names its own (it is every JWT's `aud` and the XRPC channel's issuer) */
const DEV_SERVICE_DID = 'did:web:svc.localhost'
/** a did:plc, or a did:web of a host (a port as %3A), as atproto's resolvers take them */
const SERVICE_DID_FORM = /^(did:plc:[a-z2-7]+|did:web:[A-Za-z0-9.-]+(%3A[0-9]{1,5})?)$/

/**
 * The variable that holds each internal caller's key, for every issuer of @svc/internal-context (the type refuses a
 * missing one): production refuses their development defaults, and no two may be equal.
 */
const CONTEXT_KEY_OF = {
  gateway: 'GATEWAY_CONTEXT_KEY',
  'xrpc-adapter': 'ADAPTER_CONTEXT_KEY',
  events: 'EVENTS_CONTEXT_KEY',
  payments: 'PAYMENTS_CONTEXT_KEY',
  apps: 'APPS_CONTEXT_KEY',
  tickets: 'TICKETS_CONTEXT_KEY',
} as const satisfies Record<Issuer, string>
const CONTEXT_KEYS = ISSUERS.map((issuer) => CONTEXT_KEY_OF[issuer])
type ContextKey = (typeof CONTEXT_KEY_OF)[Issuer]

/** One value per issuer, from the variable that holds its key. */
const perIssuer = <T>(value: (variable: ContextKey) => T): Record<Issuer, T> =>
  Object.fromEntries(ISSUERS.map((issuer) => [issuer, value(CONTEXT_KEY_OF[issuer])])) as Record<Issuer, T>

/**
 * A URL the service puts in its answers and pages (apps get `…/checkout/<token>`, `…/dashboard/approvals/<id>`): http(s)
 * and only the characters a URI may hold, as the lexicons' `uri` format checks its answers (a space would make every
 * answer that carries it a 500).
 */
/** A URL without credentials, query or fragment (one that does not parse is false: its own refusal says so). */
function isBareUrl(v: string): boolean {
  try {
    const u = new URL(v)
    return u.username === '' && u.password === '' && u.search === '' && u.hash === ''
  } catch {
    return false
  }
}

const publicUrl = z
  .string()
  .url()
  .refine((v) => /^https?:\/\/[A-Za-z0-9\-._~:/?#[\]@!$&'()*+,;=%]+$/i.test(v), 'must be an http(s) URL of URI characters only (no spaces; a Unicode host in punycode)')
  // links are built by appending paths to it, and every link shown to buyers, creators and logs would carry the rest
  .refine(isBareUrl, 'must be an http(s) URL without credentials, query or fragment (every link is built on it)')

/**
 * Whether `value` parses, and what it parses to passes `ok`. A value that does not parse is invalid, and no more: the
 * parser's error quotes the value (a URL's password included), and a process prints what stops its start.
 */
const parsesAnd =
  <T>(parse: (value: string) => T, ok: (parsed: T) => boolean) =>
  (value: string): boolean => {
    try {
      return ok(parse(value))
    } catch {
      return false
    }
  }

/**
 * MongoDB's URL must name the database: without one the driver quietly uses `test`, so a URL that forgot it would put
 * every domain's data there and nothing would say so. Read as the driver reads it, so a replica set's seed list
 * (`mongodb://h1:27017,h2:27017/svc?replicaSet=rs0`), which is no WHATWG URL, is accepted.
 */
const mongoUrl = z.string().refine(
  parsesAnd((v) => new ConnectionString(v), (url) => (url.protocol === 'mongodb:' || url.protocol === 'mongodb+srv:') && /^\/[^/]+$/.test(url.pathname)),
  'must be a mongodb:// (or mongodb+srv://) URL that names the database, e.g. mongodb://host:27017/svc',
)

/** Redis's URL: redis:// or rediss://, with no database or a number 0-15 (ioredis skips any other path and uses 0). */
const redisUrl = z.string().refine(
  parsesAnd((v) => new URL(v), (url) => (url.protocol === 'redis:' || url.protocol === 'rediss:') && /^(\/?|\/(\d|1[0-5]))$/.test(url.pathname)),
  'must be a redis:// (or rediss://) URL with no database or a database number 0-15, e.g. redis://host:6379/0',
)

/** A secret set only during a rotation (docker-compose passes it empty otherwise). */
const optionalSecret = z.preprocess((v) => (v === '' ? undefined : v), z.string().min(32).optional())

/** The callers' keys, with the keys before a rotation where some are set. */
function withPrevious(current: Readonly<Record<Issuer, string>>, previous: Record<Issuer, string | undefined>): CallerKeys {
  const set = Object.fromEntries(Object.entries(previous).filter(([, v]) => v !== undefined)) as Partial<Record<Issuer, string>>
  return Object.keys(set).length > 0 ? { ...current, previous: set } : current
}

const variables = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    MONGO_URL: mongoUrl.default('mongodb://127.0.0.1:27027/svc'),
    REDIS_URL: redisUrl.default('redis://127.0.0.1:6379/0'),
    REDIS_PREFIX: z.string().default('svc:'),
    // the issuer of the XRPC channel's JWTs, which receivers resolve: atproto resolves did:plc, and did:web of a host alone
    SERVICE_DID: z
      .string()
      .refine((v) => isDid(v) && SERVICE_DID_FORM.test(v), 'must be a did:plc, or a did:web of a host alone (receivers resolve no did:web path)')
      .default(DEV_SERVICE_DID),
    // logged at start: no credentials (fetch refuses a URL that carries them anyway), no query or fragment
    PLC_URL: z
      .string()
      .url()
      .refine((v) => /^https?:\/\//i.test(v) && isBareUrl(v), 'must be an http(s) URL without credentials, query or fragment')
      .default('https://plc.directory'),
    BASE_URL: publicUrl.default('http://127.0.0.1:4000'),
    CHECKOUT_URL: publicUrl.default('http://127.0.0.1:4001'),
    // default: {CHECKOUT_URL}/dashboard (the checkout host serves the dashboard)
    DASHBOARD_URL: publicUrl.optional(),
    HOST: z.string().default('127.0.0.1'),
    API_PORT: port(4000),
    CHECKOUT_PORT: port(4001),
    GATEWAY_PORT: port(4100),
    APPS_SUBGRAPH_PORT: port(4201),
    ACTORS_SUBGRAPH_PORT: port(4202),
    PAYMENTS_SUBGRAPH_PORT: port(4203),
    EVENTS_SUBGRAPH_PORT: port(4204),
    TICKETS_SUBGRAPH_PORT: port(4205),
    /** the operators' BullMQ board */
    BOARD_PORT: port(4300),
    /** the events workers' operations routes (/livez, /readyz, /metrics) */
    WORKERS_PORT: port(4301),
    /** time every database command for /metrics (the driver's command monitoring costs about 10% of a subgraph's throughput here) */
    DB_COMMAND_METRICS: bool.default(false),
    /**
     * how long a process may take to finish its requests and jobs once told to stop, before it exits anyway: a pay
     * under way finishes within it (the processor's 20 s charge, then 5 s to ask it), rather than be left to recovery
     */
    SHUTDOWN_TIMEOUT_MS: emptyAsUnset(z.coerce.number().int().min(100).max(600_000).default(30_000)),
    GATEWAY_URL: z.string().url().default('http://127.0.0.1:4100/graphql'),
    /** how long the gateway waits for a subgraph's answer before answering ServiceUnavailable (503) */
    SUBGRAPH_TIMEOUT_MS: emptyAsUnset(z.coerce.number().int().min(100).max(120_000).default(30_000)),
    APPS_SUBGRAPH_URL: z.string().url().default('http://127.0.0.1:4201/graphql'),
    ACTORS_SUBGRAPH_URL: z.string().url().default('http://127.0.0.1:4202/graphql'),
    PAYMENTS_SUBGRAPH_URL: z.string().url().default('http://127.0.0.1:4203/graphql'),
    EVENTS_SUBGRAPH_URL: z.string().url().default('http://127.0.0.1:4204/graphql'),
    TICKETS_SUBGRAPH_URL: z.string().url().default('http://127.0.0.1:4205/graphql'),
    /** derives the checkout status and browser tokens (HMAC); only their hashes are stored */
    PAYMENT_TOKEN_SECRET: z.string().min(32).default(`${DEV_SECRET}-payment-tokens`),
    /** the payment token secret before the last rotation, while checkouts started under it may be initiated again */
    PAYMENT_TOKEN_SECRET_PREVIOUS: optionalSecret,
    /** an abandoned hosted checkout fails as expired after this many seconds (Stripe's default: 24 h) */
    CHECKOUT_EXPIRY_SECONDS: emptyAsUnset(z.coerce.number().int().min(60).max(7 * 24 * 3600).default(24 * 3600)),
    /** the domains' outbox relays delete events relayed this long ago (at least the replay window) */
    OUTBOX_RETENTION_MS: emptyAsUnset(z.coerce.number().int().min(24 * 3_600_000).max(365 * 24 * 3_600_000).default(7 * 24 * 3_600_000)),
    /** after Redis lost its data, the outbox relays publish again the events they relayed this long ago */
    OUTBOX_REPLAY_WINDOW_MS: emptyAsUnset(z.coerce.number().int().min(3_600_000).max(365 * 24 * 3_600_000).default(24 * 3_600_000)),
    /** the live payment processor; none is built in, so live checkouts are refused until one is configured */
    LIVE_PROCESSOR: z.enum(['none']).default('none'),
    /**
     * the test processor waits this long before it charges, as a real processor's round trip (the fault run kills a
     * charge in it); at most 15 s, inside the 20 s the payments domain waits for a charge (past it every test charge
     * would time out, and be refused once its key was closed)
     */
    TEST_PROCESSOR_LATENCY_MS: emptyAsUnset(z.coerce.number().int().min(0).max(15_000).default(0)),
    /** encrypts the webhook signing secrets at rest (AES-256-GCM; the key is its SHA-256) */
    WEBHOOK_SECRET_KEY: z.string().min(32).default(`${DEV_SECRET}-webhook-secrets`),
    /** the webhook secret key before its rotation, while signing secrets stored under it are re-encrypted */
    WEBHOOK_SECRET_KEY_PREVIOUS: optionalSecret,
    /**
     * the service's own signing key (hex secp256k1 private key): service-auth JWTs to app-hosted XRPC receivers,
     * published as `#atproto` in the service's did:web document. The development default is a fixed, public key.
     */
    SERVICE_SIGNING_KEY: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex characters (a secp256k1 private key)')
      .refine(isSecp256k1PrivateKey, 'is not a secp256k1 private key (it must be above 0 and below the curve\'s order)')
      .default(DEV_SIGNING_KEY),
    /** a delivery attempt that has not answered in this time fails */
    DELIVERY_TIMEOUT_MS: emptyAsUnset(z.coerce.number().int().min(100).max(60_000).default(10_000)),
    /** multiplies every delay of the retry schedule (1 = real time; tests run it much faster) */
    DELIVERY_SCHEDULE_SCALE: emptyAsUnset(z.coerce.number().positive().max(1).default(1)),
    /** how often a held delivery (paused webhook) checks whether it may go */
    DELIVERY_HOLD_RECHECK_MS: emptyAsUnset(z.coerce.number().int().min(10).max(3_600_000).default(60_000)),
    /**
     * how long a delivery stays held (its webhook paused or disabled) before it ends failed unsent (3 days, as long as
     * the retry schedule): each keeps a job in Redis, and a paused app's events would otherwise be kept for ever
     */
    DELIVERY_HOLD_MAX_MS: emptyAsUnset(z.coerce.number().int().min(100).max(30 * 24 * 3_600_000).default(3 * 24 * 3_600_000)),
    /** a delivery job's lock; a worker that dies holding it gives the job back after about this long */
    DELIVERY_LOCK_MS: emptyAsUnset(z.coerce.number().int().min(500).max(600_000).default(30_000)),
    /**
     * how long a delivery worker keeps an app environment's endpoint and signing secrets (0: read before every
     * attempt); a pause, a new URL or a rotation reaches deliveries within this time
     */
    DELIVERY_APP_CACHE_MS: emptyAsUnset(z.coerce.number().int().min(0).max(60_000).default(1000)),
    /** how often the events workers look for open deliveries whose job Redis lost (and at start, and on reconnect) */
    DELIVERY_RECONCILE_MS: emptyAsUnset(z.coerce.number().int().min(100).max(3_600_000).default(60_000)),
    /** an endpoint whose every attempt has failed this long is disabled (Svix: 5 days); one answering 410 at once */
    DELIVERY_DISABLE_AFTER_MS: emptyAsUnset(z.coerce.number().int().min(1000).max(90 * 24 * 3_600_000).default(5 * 24 * 3_600_000)),
    /** parallel deliveries per worker process */
    DELIVERY_CONCURRENCY: emptyAsUnset(z.coerce.number().int().min(1).max(500).default(20)),
    /**
     * an app environment an attempt of which has run this long counts as slow for a minute (docs/events.md, "Slow
     * receivers"); unset: 2000, or half of DELIVERY_TIMEOUT_MS when that is shorter
     */
    DELIVERY_SLOW_MS: emptyAsUnset(z.coerce.number().int().min(10).max(60_000).optional()),
    /** the slots of one worker process that a slow app environment's attempts may hold at once */
    DELIVERY_SLOW_APP_CONCURRENCY: emptyAsUnset(z.coerce.number().int().min(1).max(500).default(5)),
    /**
     * Each calling process's own key for the internal context it signs (docs/architecture.md, "How an internal caller
     * is authenticated"); the gateway and the subgraphs hold all of them to verify.
     */
    GATEWAY_CONTEXT_KEY: z.string().min(32).default(`${DEV_SECRET}-gateway`),
    ADAPTER_CONTEXT_KEY: z.string().min(32).default(`${DEV_SECRET}-adapter`),
    EVENTS_CONTEXT_KEY: z.string().min(32).default(`${DEV_SECRET}-events`),
    PAYMENTS_CONTEXT_KEY: z.string().min(32).default(`${DEV_SECRET}-payments`),
    APPS_CONTEXT_KEY: z.string().min(32).default(`${DEV_SECRET}-apps`),
    TICKETS_CONTEXT_KEY: z.string().min(32).default(`${DEV_SECRET}-tickets`),
    /** during a rotation of a context key: the key before it, which the gateway and subgraphs still accept */
    GATEWAY_CONTEXT_KEY_PREVIOUS: optionalSecret,
    ADAPTER_CONTEXT_KEY_PREVIOUS: optionalSecret,
    EVENTS_CONTEXT_KEY_PREVIOUS: optionalSecret,
    PAYMENTS_CONTEXT_KEY_PREVIOUS: optionalSecret,
    APPS_CONTEXT_KEY_PREVIOUS: optionalSecret,
    TICKETS_CONTEXT_KEY_PREVIOUS: optionalSecret,
    /** requests per app and environment on /xrpc in each window (0: no limit); Stripe allows 100 per second in live mode */
    XRPC_RATE_LIMIT_MAX: emptyAsUnset(z.coerce.number().int().min(0).default(6000)),
    XRPC_RATE_LIMIT_WINDOW_MS: emptyAsUnset(z.coerce.number().int().min(1000).max(3_600_000).default(60_000)),
    XRPC_ISSUER_LOOKUPS_PER_ADDRESS: emptyAsUnset(z.coerce.number().int().min(0).default(120)),
    /** requests per API key on the developer utility routes in each window (0: no limit) */
    UTILITY_RATE_LIMIT_MAX: emptyAsUnset(z.coerce.number().int().min(0).default(600)),
    UTILITY_RATE_LIMIT_WINDOW_MS: emptyAsUnset(z.coerce.number().int().min(1000).max(3_600_000).default(60_000)),
    /**
     * the adapter's public hosts: a request whose headers have not all arrived in 10 s (or this, if shorter), or
     * whose body has not arrived in this time, is answered 408 and its connection closed (slow-request floods)
     */
    REQUEST_TIMEOUT_MS: emptyAsUnset(z.coerce.number().int().min(1000).max(600_000).default(30_000)),
    /** card testing: refused card forms one checkout takes; the next locks it (failed, too_many_attempts) */
    PAY_ATTEMPTS_PER_CHECKOUT: emptyAsUnset(z.coerce.number().int().min(1).max(100).default(5)),
    /** card testing: pay-form submissions from one client address in each window; later ones are refused (429), the checkout left open */
    PAY_ATTEMPTS_PER_ADDRESS: emptyAsUnset(z.coerce.number().int().min(1).default(20)),
    PAY_ATTEMPTS_WINDOW_MS: emptyAsUnset(z.coerce.number().int().min(1000).max(7 * 24 * 3_600_000).default(3_600_000)),
    /**
     * Which proxies in front of the adapter are trusted to name the client (X-Forwarded-For), for the per-address
     * card-testing count and the logs: `true` (all) or a comma-separated list of addresses or CIDRs. Unset: none, the
     * connection's address is the client's. (A number of hops is refused: Fastify 5 trusts no one for it.)
     */
    TRUST_PROXY: z
      .string()
      .regex(/^(?!\s*\d+\s*$)/, 'a number of hops is not supported: list the proxies (addresses or CIDRs) or say true')
      .superRefine((value, ctx) => {
        const listed = parseTrustProxy(value)
        for (const entry of Array.isArray(listed) ? listed.filter((p) => !isProxyEntry(p)) : []) {
          ctx.addIssue({ code: 'custom', message: `${JSON.stringify(entry)} is not an address or a CIDR (say true, false, or list the proxies)` })
        }
      })
      .optional(),
    OPERATOR_TOKEN: z.string().min(32).default(`${DEV_SECRET}-operator`),
    /** what every process's `/metrics` asks for (a scraper's credential: it grants nothing else) */
    METRICS_TOKEN: z.string().min(32).default(`${DEV_SECRET}-metrics`),
    GRAPHIQL: bool.optional(),
    DEV_ALLOW_LOOPBACK_WEBHOOKS: bool.default(false),
    ALLOW_INSECURE_DID_WEB: bool.default(false),
  })

/** The secrets, each held only by the processes that use it (COMPONENT_SECRETS). */
const SECRETS = [...CONTEXT_KEYS, 'OPERATOR_TOKEN', 'METRICS_TOKEN', 'PAYMENT_TOKEN_SECRET', 'WEBHOOK_SECRET_KEY', 'SERVICE_SIGNING_KEY'] as const
export type Secret = (typeof SECRETS)[number]

/**
 * What each process (by its runProcess name) holds. The gateway and the subgraphs verify every caller's context, so
 * they hold every context key (an HMAC key verifies and signs alike); a process that only calls holds its own. The
 * operator token is held where operators are let in (the gateway, the board); everything else by its one user. A
 * process reading a secret it does not hold fails at once, naming it (loadConfig).
 */
export const COMPONENT_SECRETS = {
  gateway: [...CONTEXT_KEYS, 'OPERATOR_TOKEN', 'METRICS_TOKEN'],
  'xrpc-adapter': ['ADAPTER_CONTEXT_KEY', 'SERVICE_SIGNING_KEY', 'METRICS_TOKEN'],
  'events-workers': ['EVENTS_CONTEXT_KEY', 'WEBHOOK_SECRET_KEY', 'SERVICE_SIGNING_KEY', 'METRICS_TOKEN'],
  board: ['OPERATOR_TOKEN'],
  apps: [...CONTEXT_KEYS, 'METRICS_TOKEN'],
  actors: [...CONTEXT_KEYS, 'METRICS_TOKEN'],
  payments: [...CONTEXT_KEYS, 'PAYMENT_TOKEN_SECRET', 'METRICS_TOKEN'],
  events: [...CONTEXT_KEYS, 'WEBHOOK_SECRET_KEY', 'METRICS_TOKEN'],
  tickets: [...CONTEXT_KEYS, 'METRICS_TOKEN'],
} as const satisfies Record<string, readonly Secret[]>
export type Component = keyof typeof COMPONENT_SECRETS

/**
 * The secret variables `component` is given: its secrets, and the ones before a rotation where it verifies with them
 * (every context key, for the gateway and the subgraphs) or reads tokens made under them (the payment token secret).
 */
export function componentSecretVariables(component: Component): string[] {
  const held: readonly Secret[] = COMPONENT_SECRETS[component]
  const verifies = CONTEXT_KEYS.every((key) => held.includes(key))
  const rotated = (secret: Secret) => secret === 'PAYMENT_TOKEN_SECRET' || secret === 'WEBHOOK_SECRET_KEY' || (verifies && (CONTEXT_KEYS as readonly string[]).includes(secret))
  return held.flatMap((secret) => (rotated(secret) ? [secret, `${secret}_PREVIOUS`] : [secret]))
}

/** The schema for a process holding `held` (every secret when it is not one of the components: tools, tests). */
const schemaFor = (held: ReadonlySet<Secret>) =>
  variables.superRefine((env, ctx) => {
    const holds = (key: Secret) => held.has(key)
    // each caller is known by its key alone, so no two may share one (a key before a rotation included)
    const keys = CONTEXT_KEYS.filter(holds)
    // nor may a secret of one kind be another's (the workers' WEBHOOK_SECRET_KEY set to the gateway's key would let
    // them sign as the gateway)
    const credentials = [...keys, ...keys.map((k) => `${k}_PREVIOUS` as const), ...(['OPERATOR_TOKEN', 'METRICS_TOKEN', 'PAYMENT_TOKEN_SECRET', 'WEBHOOK_SECRET_KEY'] as const).filter(holds)]
    for (const [i, key] of credentials.entries()) {
      if (env[key] === undefined) continue
      const same = credentials.slice(0, i).find((other) => env[other] === env[key])
      if (same) ctx.addIssue({ code: 'custom', path: [key], message: `must differ from ${same}` })
    }
    if (holds('PAYMENT_TOKEN_SECRET') && env.PAYMENT_TOKEN_SECRET_PREVIOUS === env.PAYMENT_TOKEN_SECRET) {
      ctx.addIssue({ code: 'custom', path: ['PAYMENT_TOKEN_SECRET_PREVIOUS'], message: 'must differ from PAYMENT_TOKEN_SECRET (it is the one before the rotation)' })
    }
    if (holds('WEBHOOK_SECRET_KEY') && env.WEBHOOK_SECRET_KEY_PREVIOUS === env.WEBHOOK_SECRET_KEY) {
      ctx.addIssue({ code: 'custom', path: ['WEBHOOK_SECRET_KEY_PREVIOUS'], message: 'must differ from WEBHOOK_SECRET_KEY (it is the one before the rotation)' })
    }
    // a delivery attempt under way when the workers are told to stop finishes within the stop's time, with 5 s for
    // its endpoint's lookup and its outcome's write: past it the process exits holding the job, and the attempt is
    // logged interrupted and sent again
    if (env.SHUTDOWN_TIMEOUT_MS < env.DELIVERY_TIMEOUT_MS + 5_000) {
      ctx.addIssue({ code: 'custom', path: ['SHUTDOWN_TIMEOUT_MS'], message: `must be at least DELIVERY_TIMEOUT_MS + 5000 (${env.DELIVERY_TIMEOUT_MS + 5_000}): an attempt under way finishes before the workers stop` })
    }
    // an attempt that times out must have counted as slow first
    if (env.DELIVERY_SLOW_MS !== undefined && env.DELIVERY_SLOW_MS >= env.DELIVERY_TIMEOUT_MS) {
      ctx.addIssue({ code: 'custom', path: ['DELIVERY_SLOW_MS'], message: `must be below DELIVERY_TIMEOUT_MS (${env.DELIVERY_TIMEOUT_MS}): an attempt that times out counts as slow` })
    }
    if (env.NODE_ENV !== 'production' && usesDevelopmentSecrets(env, held)) {
      // NODE_ENV defaults to development: a deployment that forgot it (or a staging one set to test) would serve the
      // world with secrets everyone has
      if (!LISTEN_LOOPBACK.has(env.HOST)) {
        ctx.addIssue({ code: 'custom', path: ['HOST'], message: `${env.HOST} is reachable beyond this machine, and the development defaults of the secrets are public: set NODE_ENV=production with real secrets, or HOST=127.0.0.1` })
      }
      // so is one listening on loopback behind a proxy on the same machine: its public address gives it away
      for (const key of ['CHECKOUT_URL', 'DASHBOARD_URL'] as const) {
        const value = env[key]
        if (value !== undefined && !LOOPBACK_HOSTS.has(new URL(value).hostname)) {
          ctx.addIssue({ code: 'custom', path: [key], message: 'is an address beyond this machine, and the development defaults of the secrets are public: set NODE_ENV=production with real secrets' })
        }
      }
    }
    // the outbox deletes what a replay would publish again
    if (env.OUTBOX_REPLAY_WINDOW_MS > env.OUTBOX_RETENTION_MS) {
      ctx.addIssue({ code: 'custom', path: ['OUTBOX_REPLAY_WINDOW_MS'], message: `must be at most OUTBOX_RETENTION_MS (${env.OUTBOX_RETENTION_MS}): the outboxes keep relayed events no longer` })
    }
    // a staging deployment (NODE_ENV=test with real secrets) on a public address: apps' webhooks could reach this
    // machine's own services, a did:web document could be fetched over http, and GraphiQL's page (scripts from
    // unpkg.com) would be where the operator token is typed
    if (env.NODE_ENV !== 'production' && !LISTEN_LOOPBACK.has(env.HOST)) {
      for (const key of ['DEV_ALLOW_LOOPBACK_WEBHOOKS', 'ALLOW_INSECURE_DID_WEB', 'GRAPHIQL'] as const) {
        if (env[key]) ctx.addIssue({ code: 'custom', path: [key], message: `is a development setting, accepted only with HOST on loopback (${env.HOST} is reachable beyond this machine)` })
      }
    }
    if (env.NODE_ENV !== 'production') return
    for (const key of SECRETS.filter(holds)) {
      if (key !== 'SERVICE_SIGNING_KEY' && env[key].startsWith(DEV_SECRET)) ctx.addIssue({ code: 'custom', path: [key], message: 'must be set in production' })
      // the key before a rotation is still accepted: a development default there signs as well as the key itself
      const previous = (env as Record<string, unknown>)[`${key}_PREVIOUS`]
      if (typeof previous === 'string' && previous.startsWith(DEV_SECRET)) {
        ctx.addIssue({ code: 'custom', path: [`${key}_PREVIOUS`], message: 'is a public development default: leave it unset in production (a rotation away from the development key needs no overlap)' })
      }
    }
    if (holds('SERVICE_SIGNING_KEY') && env.SERVICE_SIGNING_KEY === DEV_SIGNING_KEY) {
      ctx.addIssue({ code: 'custom', path: ['SERVICE_SIGNING_KEY'], message: 'must be set in production' })
    }
    if (env.SERVICE_DID === DEV_SERVICE_DID) {
      ctx.addIssue({ code: 'custom', path: ['SERVICE_DID'], message: 'must be set in production (the service\'s own DID: the audience of every JWT apps send)' })
    }
    if (env.DELIVERY_SCHEDULE_SCALE !== 1) {
      ctx.addIssue({ code: 'custom', path: ['DELIVERY_SCHEDULE_SCALE'], message: 'is a test setting (it shortens the 3-day retry schedule)' })
    }
    // mercurius's GraphiQL page runs React and GraphiQL from unpkg.com (no integrity hashes), and the operator token
    // is typed into that page
    if (env.GRAPHIQL) {
      ctx.addIssue({ code: 'custom', path: ['GRAPHIQL'], message: 'is a development setting: its page loads its scripts from unpkg.com, and the operator token is typed into it' })
    }
    if (env.DEV_ALLOW_LOOPBACK_WEBHOOKS) {
      ctx.addIssue({ code: 'custom', path: ['DEV_ALLOW_LOOPBACK_WEBHOOKS'], message: 'is a development setting' })
    }
    // every client would name its own address (X-Forwarded-For), and the per-address limits (card testing, issuer
    // lookups, the utility routes) count nothing
    const trusted = parseTrustProxy(env.TRUST_PROXY)
    if (trusted === true || (Array.isArray(trusted) && trusted.some((p) => TRUST_EVERYONE.has(p)))) {
      ctx.addIssue({ code: 'custom', path: ['TRUST_PROXY'], message: 'trusts every client to name its own address in production: list the proxies in front of the adapter (addresses or CIDRs)' })
    }
    // apps' did:plc documents hold the keys their JWTs are checked with: fetched in the clear, they could be swapped
    if (new URL(env.PLC_URL).protocol !== 'https:') {
      ctx.addIssue({ code: 'custom', path: ['PLC_URL'], message: 'must be https in production (apps\' signing keys are read from it)' })
    }
    // did:web over http to localhost: in production the "app" whose DID document the service fetches would be itself
    if (env.ALLOW_INSECURE_DID_WEB) {
      ctx.addIssue({ code: 'custom', path: ['ALLOW_INSECURE_DID_WEB'], message: 'is a development setting' })
    }
    // the pages' capabilities (checkout links, the dashboard's session cookie, Secure only over https) cross the network
    // in the clear over http; a loopback host (a container tried locally) never leaves the machine
    for (const key of ['CHECKOUT_URL', 'DASHBOARD_URL'] as const) {
      const value = env[key]
      if (value === undefined) continue
      const url = new URL(value)
      if (url.protocol !== 'https:' && !LOOPBACK_HOSTS.has(url.hostname)) ctx.addIssue({ code: 'custom', path: [key], message: 'must be https in production (http only on a loopback host)' })
    }
  })

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])
/** TRUST_PROXY entries that take in every address */
const TRUST_EVERYONE = new Set(['0.0.0.0/0', '::/0', '::0/0'])
/** HOST values that listen on this machine only */
const LISTEN_LOOPBACK = new Set(['localhost', '127.0.0.1', '::1'])

/** Whether any secret held is still its development default (public: it is in this repository). */
function usesDevelopmentSecrets(env: { [K in Secret]: string }, held: ReadonlySet<Secret>): boolean {
  return SECRETS.some((key) => held.has(key) && isDevelopmentSecret(env[key]))
}

/** A secret's value that is one of this repository's development defaults. */
const isDevelopmentSecret = (value: string): boolean => value.startsWith(DEV_SECRET) || value === DEV_SIGNING_KEY

export interface Config {
  nodeEnv: 'development' | 'test' | 'production'
  logLevel: string
  mongoUrl: string
  redisUrl: string
  redisPrefix: string
  serviceDid: string
  plcUrl: string
  baseUrl: string
  checkoutUrl: string
  dashboardUrl: string
  host: string
  ports: {
    api: number
    checkout: number
    gateway: number
    appsSubgraph: number
    actorsSubgraph: number
    paymentsSubgraph: number
    eventsSubgraph: number
    ticketsSubgraph: number
    board: number
    workers: number
  }
  shutdownTimeoutMs: number
  databaseCommandMetrics: boolean
  gatewayUrl: string
  /** SUBGRAPH_TIMEOUT_MS */
  subgraphTimeoutMs: number
  subgraphs: { apps: string; actors: string; payments: string; events: string; tickets: string }
  secrets: {
    /** every issuer's internal-context key; a process signs with its own (`callerKeys[issuer]`) */
    callerKeys: CallerKeys
    /** OPERATOR_TOKEN: an operator's bearer at the gateway, and the board's password */
    operatorToken: string
    /** METRICS_TOKEN: what `/metrics` asks for */
    metricsToken: string
    paymentTokens: string
    /** PAYMENT_TOKEN_SECRET_PREVIOUS, or null */
    previousPaymentTokens: string | null
    webhookSecretKey: string
    /** WEBHOOK_SECRET_KEY_PREVIOUS, or null */
    previousWebhookSecretKey: string | null
    serviceSigningKey: string
  }
  delivery: DeliverySettings
  limits: AdapterLimits
  /** TRUST_PROXY, as Fastify's `trustProxy` takes it */
  trustProxy: TrustProxy
  checkoutExpirySeconds: number
  /** OUTBOX_RETENTION_MS */
  outboxRetentionMs: number
  /** OUTBOX_REPLAY_WINDOW_MS */
  outboxReplayWindowMs: number
  liveProcessor: 'none'
  /** TEST_PROCESSOR_LATENCY_MS */
  testProcessorLatencyMs: number
  graphiql: boolean
  devAllowLoopbackWebhooks: boolean
  allowInsecureDidWeb: boolean
}

/** How the events workers deliver (docs/events.md). */
export interface DeliverySettings {
  timeoutMs: number
  scheduleScale: number
  holdRecheckMs: number
  /** DELIVERY_HOLD_MAX_MS */
  holdMaxMs: number
  lockMs: number
  concurrency: number
  /** DELIVERY_APP_CACHE_MS */
  appCacheMs: number
  /** DELIVERY_RECONCILE_MS */
  reconcileMs: number
  /** DELIVERY_DISABLE_AFTER_MS */
  disableAfterMs: number
  /** DELIVERY_SLOW_MS */
  slowMs: number
  /** DELIVERY_SLOW_APP_CONCURRENCY */
  slowAppConcurrency: number
}

/** `max` requests per `windowMs` under one key; max 0 turns the limit off. */
export interface RateLimit {
  max: number
  windowMs: number
}

/** What the adapter limits (docs/operations.md, "Rate limits"). */
/** Fastify's `trustProxy`: none (false), all (true), or the proxies' addresses or CIDRs. */
export type TrustProxy = boolean | string[]

/** A TRUST_PROXY entry Fastify's proxy-addr takes: an address, a CIDR, or one of its names for a range. */
function isProxyEntry(entry: string): boolean {
  if (PROXY_RANGE_NAMES.has(entry)) return true
  const [address = '', prefix, extra] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || extra !== undefined) return false
  return prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128))
}
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal'])

/** TRUST_PROXY's value: unset, empty or `false` trusts none. */
export function parseTrustProxy(value: string | undefined): TrustProxy {
  const v = value?.trim() ?? ''
  if (v === '' || v === 'false') return false
  if (v === 'true') return true
  return v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
}

export interface AdapterLimits {
  /** per app and environment on /xrpc */
  xrpc: RateLimit
  /** per client address on /xrpc: the distinct issuers whose DID documents its calls had looked up, or no app is registered for */
  issuerLookupsPerAddress: RateLimit
  /** per API key on the developer utility routes */
  utility: RateLimit
  /** REQUEST_TIMEOUT_MS: the whole request (headers within min(10 s, this)) must arrive within it, or 408 */
  requestTimeoutMs: number
  /** refused card forms per checkout before the next one locks it */
  payAttemptsPerCheckout: number
  /** pay-form submissions per client address per window before later ones are refused */
  payAttemptsPerAddress: RateLimit
}

export class ConfigError extends Error {}

/**
 * `values` with the entries whose secret is held; reading another throws, naming the secret and the process. Those
 * are not enumerable either, so spreading or logging the object never touches them.
 */
function heldOnly<T extends object>(values: T, secretOf: { [K in keyof T]: Secret }, held: ReadonlySet<Secret>, component: Component | undefined): T {
  const out = {} as T
  for (const key of Object.keys(values) as (keyof T)[]) {
    if (held.has(secretOf[key])) out[key] = values[key]
    else {
      Object.defineProperty(out, key, {
        enumerable: false,
        get() {
          throw new ConfigError(`${component} does not hold ${secretOf[key]} (packages/config, COMPONENT_SECRETS)`)
        },
      })
    }
  }
  return out
}

/** Every environment variable the configuration reads (the README names each one). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(variables.shape)

/**
 * The configuration of `component` (a process: it holds only its secrets, COMPONENT_SECRETS), or, without one, of a
 * tool or test that may use them all.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, component?: Component): Config {
  const held = new Set<Secret>(component ? COMPONENT_SECRETS[component] : SECRETS)
  // a variable set empty (compose's `${X:-}`, an `X=` line) is unset: its default, never '' (an empty REDIS_PREFIX or HOST)
  const given = Object.fromEntries(Object.entries(env).filter(([, value]) => value === undefined || value.trim() !== ''))
  const parsed = schemaFor(held).safeParse(given)
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`)
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}`)
  }
  const e = parsed.data
  return {
    nodeEnv: e.NODE_ENV,
    logLevel: e.LOG_LEVEL,
    mongoUrl: e.MONGO_URL,
    redisUrl: e.REDIS_URL,
    redisPrefix: e.REDIS_PREFIX,
    serviceDid: e.SERVICE_DID,
    plcUrl: e.PLC_URL,
    baseUrl: e.BASE_URL.replace(/\/$/, ''),
    checkoutUrl: e.CHECKOUT_URL.replace(/\/$/, ''),
    dashboardUrl: (e.DASHBOARD_URL ?? `${e.CHECKOUT_URL.replace(/\/$/, '')}/dashboard`).replace(/\/$/, ''),
    host: e.HOST,
    ports: {
      api: e.API_PORT,
      checkout: e.CHECKOUT_PORT,
      gateway: e.GATEWAY_PORT,
      appsSubgraph: e.APPS_SUBGRAPH_PORT,
      actorsSubgraph: e.ACTORS_SUBGRAPH_PORT,
      paymentsSubgraph: e.PAYMENTS_SUBGRAPH_PORT,
      eventsSubgraph: e.EVENTS_SUBGRAPH_PORT,
      ticketsSubgraph: e.TICKETS_SUBGRAPH_PORT,
      board: e.BOARD_PORT,
      workers: e.WORKERS_PORT,
    },
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    databaseCommandMetrics: e.DB_COMMAND_METRICS,
    gatewayUrl: e.GATEWAY_URL,
    subgraphTimeoutMs: e.SUBGRAPH_TIMEOUT_MS,
    subgraphs: { apps: e.APPS_SUBGRAPH_URL, actors: e.ACTORS_SUBGRAPH_URL, payments: e.PAYMENTS_SUBGRAPH_URL, events: e.EVENTS_SUBGRAPH_URL, tickets: e.TICKETS_SUBGRAPH_URL },
    // a verifier holds every context key, with those before a rotation; a caller only its own, which it signs with
    secrets: Object.assign(
      heldOnly(
        {
          operatorToken: e.OPERATOR_TOKEN,
          metricsToken: e.METRICS_TOKEN,
          paymentTokens: e.PAYMENT_TOKEN_SECRET,
          previousPaymentTokens: e.PAYMENT_TOKEN_SECRET_PREVIOUS ?? null,
          webhookSecretKey: e.WEBHOOK_SECRET_KEY,
          previousWebhookSecretKey: e.WEBHOOK_SECRET_KEY_PREVIOUS ?? null,
          serviceSigningKey: e.SERVICE_SIGNING_KEY,
        },
        {
          operatorToken: 'OPERATOR_TOKEN',
          metricsToken: 'METRICS_TOKEN',
          paymentTokens: 'PAYMENT_TOKEN_SECRET',
          previousPaymentTokens: 'PAYMENT_TOKEN_SECRET',
          webhookSecretKey: 'WEBHOOK_SECRET_KEY',
          previousWebhookSecretKey: 'WEBHOOK_SECRET_KEY',
          serviceSigningKey: 'SERVICE_SIGNING_KEY',
        },
        held,
        component,
      ),
      {
        callerKeys: CONTEXT_KEYS.every((key) => held.has(key))
          ? withPrevious(
              perIssuer((variable) => e[variable]),
              perIssuer((variable) => e[`${variable}_PREVIOUS`]),
            )
          : heldOnly(perIssuer((variable) => e[variable]), perIssuer((variable) => variable), held, component),
      },
    ),
    delivery: {
      timeoutMs: e.DELIVERY_TIMEOUT_MS,
      scheduleScale: e.DELIVERY_SCHEDULE_SCALE,
      holdRecheckMs: e.DELIVERY_HOLD_RECHECK_MS,
      holdMaxMs: e.DELIVERY_HOLD_MAX_MS,
      lockMs: e.DELIVERY_LOCK_MS,
      concurrency: e.DELIVERY_CONCURRENCY,
      appCacheMs: e.DELIVERY_APP_CACHE_MS,
      reconcileMs: e.DELIVERY_RECONCILE_MS,
      disableAfterMs: e.DELIVERY_DISABLE_AFTER_MS,
      slowMs: e.DELIVERY_SLOW_MS ?? Math.min(2000, Math.floor(e.DELIVERY_TIMEOUT_MS / 2)),
      slowAppConcurrency: e.DELIVERY_SLOW_APP_CONCURRENCY,
    },
    limits: {
      xrpc: { max: e.XRPC_RATE_LIMIT_MAX, windowMs: e.XRPC_RATE_LIMIT_WINDOW_MS },
      issuerLookupsPerAddress: { max: e.XRPC_ISSUER_LOOKUPS_PER_ADDRESS, windowMs: e.XRPC_RATE_LIMIT_WINDOW_MS },
      utility: { max: e.UTILITY_RATE_LIMIT_MAX, windowMs: e.UTILITY_RATE_LIMIT_WINDOW_MS },
      requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
      payAttemptsPerCheckout: e.PAY_ATTEMPTS_PER_CHECKOUT,
      payAttemptsPerAddress: { max: e.PAY_ATTEMPTS_PER_ADDRESS, windowMs: e.PAY_ATTEMPTS_WINDOW_MS },
    },
    trustProxy: parseTrustProxy(e.TRUST_PROXY),
    checkoutExpirySeconds: e.CHECKOUT_EXPIRY_SECONDS,
    outboxRetentionMs: e.OUTBOX_RETENTION_MS,
    outboxReplayWindowMs: e.OUTBOX_REPLAY_WINDOW_MS,
    liveProcessor: e.LIVE_PROCESSOR,
    testProcessorLatencyMs: e.TEST_PROCESSOR_LATENCY_MS,
    graphiql: e.GRAPHIQL ?? (e.NODE_ENV === 'development' && LISTEN_LOOPBACK.has(e.HOST)),
    devAllowLoopbackWebhooks: e.DEV_ALLOW_LOOPBACK_WEBHOOKS,
    allowInsecureDidWeb: e.ALLOW_INSECURE_DID_WEB,
  }
}

/**
 * Fields of a database error that hold whole documents or the values of a key: mongoose puts an insertMany's
 * documents on its error (`results`, `insertedDocs`), the driver each failed write's document (`writeErrors[].op`)
 * and the server's answer (`errorResponse`, `keyValue`). A paid hold's tickets carry their scan and page tokens, so
 * none of them is logged; the message, code and `keyPattern` say what failed.
 */
const ERROR_FIELDS_WITH_DOCUMENTS = [
  'results',
  'insertedDocs',
  'writeErrors',
  'op',
  'result',
  'errorResponse',
  'writeConcernError',
  'errInfo',
  'keyValue',
  'document',
  // Node's HTTP parser error (a malformed request, which Fastify logs at trace): the request's bytes up to the fault,
  // its Authorization and Cookie headers included
  'rawPacket',
] as const

/** pino's error serializer, without the fields above (on the error, its cause and the errors it aggregates). */
export function serializeError(err: Error): Record<string, unknown> {
  const strip = (value: unknown): void => {
    if (typeof value !== 'object' || value === null) return
    const o = value as Record<string, unknown>
    for (const field of ERROR_FIELDS_WITH_DOCUMENTS) delete o[field]
    strip(o.cause)
    if (Array.isArray(o.aggregateErrors)) o.aggregateErrors.forEach(strip)
  }
  const serialized = pino.stdSerializers.err(err) as unknown as Record<string, unknown>
  // pino returns what is not error-like as it is: strip a copy, never the caller's object
  const copy = (serialized as unknown) === err ? { ...serialized } : serialized
  strip(copy)
  return copy
}

/** The fields of a logged object that hold a secret, written as `[redacted]`. */
const SECRET_FIELDS = ['token', 'secret', 'signingSecret', 'secrets', 'apiKey', 'pageToken'] as const

/** Logger options shared by every component: structured JSON, secrets redacted. */
export function loggerOptions(config: Pick<Config, 'logLevel'>, name: string) {
  return {
    name,
    level: config.logLevel,
    serializers: { err: serializeError },
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers["svc-context"]',
        'headers.authorization',
        // the dashboard's session cookie goes with every request to the checkout host on https (`__Host-`, Path=/);
        // request serializers record no headers, and a logged header set shows no cookie either
        'req.headers.cookie',
        'headers.cookie',
        // a secret's field at the top of a line, a child logger's bindings, one or two objects down
        ...SECRET_FIELDS.flatMap((field) => [field, `*.${field}`, `*.*.${field}`]),
        // ioredis puts a failed command on its error, AUTH's password included
        'err.command.args',
        '*.err.command.args',
      ],
      censor: '[redacted]',
    },
  }
}

/**
 * What a process logs of its configuration as it starts: what decides how exposed it is (its mode, where it listens
 * and what it announces, whom it trusts, its limits), never a secret: only whether any secret it holds is a public
 * development default.
 */
export function configurationSummary(config: Config): Record<string, unknown> {
  const secrets: string[] = []
  const collect = (value: unknown): void => {
    if (typeof value === 'string') secrets.push(value)
    else if (value && typeof value === 'object') for (const v of Object.values(value)) collect(v)
  }
  collect(config.secrets)
  return {
    nodeEnv: config.nodeEnv,
    host: config.host,
    serviceDid: config.serviceDid,
    checkoutUrl: config.checkoutUrl,
    dashboardUrl: config.dashboardUrl,
    plcUrl: config.plcUrl,
    trustProxy: config.trustProxy,
    graphiql: config.graphiql,
    devAllowLoopbackWebhooks: config.devAllowLoopbackWebhooks,
    allowInsecureDidWeb: config.allowInsecureDidWeb,
    limits: config.limits,
    publicDevelopmentSecrets: secrets.some(isDevelopmentSecret),
  }
}

/**
 * The `_PREVIOUS` secrets `component` is given (a rotation under way). Each keeps the old secret working until it is
 * removed, so every start names them: a rotation left half done keeps a replaced (perhaps leaked) secret valid.
 */
export function rotationsInProgress(env: NodeJS.ProcessEnv, component: Component): string[] {
  return componentSecretVariables(component).filter((variable) => variable.endsWith('_PREVIOUS') && (env[variable] ?? '') !== '')
}

/** What a domain process gives its outbox relay (@svc/outbox's OutboxRelaySettings), the same for every domain. */
export function outboxRelaySettings(config: Config): { redisUrl: string; redisPrefix: string; retentionMs: number; replayWindowMs: number } {
  return { redisUrl: config.redisUrl, redisPrefix: config.redisPrefix, retentionMs: config.outboxRetentionMs, replayWindowMs: config.outboxReplayWindowMs }
}

/**
 * A process's entry point: the configuration read once, a pino logger named for the process, then `start`, which
 * returns its stop: that stops taking work, finishes what is in flight (requests, jobs) and closes its connections.
 * On SIGTERM or SIGINT the process stops and exits 0; one that has not stopped within SHUTDOWN_TIMEOUT_MS exits 1,
 * saying so. A configuration or start failure is printed and exits 1.
 */
export function runProcess(name: Component, start: (config: Config, logger: Logger) => Promise<() => Promise<unknown>>): void {
  let logger: Logger | undefined
  const run = async () => {
    const config = loadConfig(process.env, name)
    logger = pino(loggerOptions(config, name))
    logger.info(configurationSummary(config), 'configuration')
    const rotating = rotationsInProgress(process.env, name)
    if (rotating.length > 0) logger.warn({ variables: rotating }, 'secrets before a rotation are still accepted: remove them once the rotation is done (docs/operations.md)')
    const stop = await start(config, logger)
    const log = logger
    let stopping = false
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      // every signal is handled: a second one (a process group signalled, and tsx relaying it) must not end the
      // stop halfway; SHUTDOWN_TIMEOUT_MS bounds it
      process.on(signal, () => {
        if (stopping) return
        stopping = true
        log.info({ signal, timeoutMs: config.shutdownTimeoutMs }, 'stopping: no new work, finishing what is in flight')
        const timer = setTimeout(() => {
          log.error({ timeoutMs: config.shutdownTimeoutMs }, 'did not stop in time: exiting with work unfinished')
          process.exit(1)
        }, config.shutdownTimeoutMs)
        timer.unref()
        void stop().then(
          () => {
            log.info('stopped')
            process.exit(0)
          },
          (err: unknown) => {
            log.error({ err }, 'stop failed')
            process.exit(1)
          },
        )
      })
    }
  }
  run().catch((err: unknown) => {
    // a configuration error says what is wrong and where, never a value (a secret, a URL's password); a start that
    // failed after it (a port taken, the database away too long) is a log line like the process's others
    if (logger?.isLevelEnabled('fatal') && !(err instanceof ConfigError)) logger.fatal({ err }, 'could not start')
    else console.error(err instanceof ConfigError ? err.message : err)
    process.exit(1)
  })
}
