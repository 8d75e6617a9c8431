/**
 * The adapter serves two hosts: {base_url} with `/xrpc/*` for app backends (service-auth only) and, for a did:web
 * SERVICE_DID, the service's DID document; and
 * {checkout_url} with the developer utility routes (restricted API keys only), the hosted checkout pages
 * (/checkout/<browser token>) and the creators' dashboard (/dashboard, session cookie only). Both put `Svc-Request-Id` on every response and log with that id.
 */
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify'
import { ContractError } from '@svc/errors'
import { randomUUID } from 'node:crypto'
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import type { AdapterLimits, TrustProxy } from '@svc/config'
import { operationsRoutes, type ProcessMetrics, type ReadinessCheck } from '@svc/operations'
import type { DashboardSessions } from '@svc/dashboard-session'
import type { ServiceAuthVerifier } from '@svc/service-auth'
import { assertionVerifier } from './auth/assertion'
import { appServiceAuth } from './auth/service-auth'
import { checkoutPagesPlugin } from './checkout/plugin'
import { invalidLinkPage } from './checkout/views'
import { errorPage } from './dashboard/views'
import { sendPage } from './pages/html'
import { dashboardPlugin } from './dashboard/plugin'
import { didDocumentRoute, type ServiceIdentity } from './did-document'
import { developerConfigRoute } from './developer/config-route'
import { deliveriesRoute } from './developer/deliveries-route'
import { redriveRoute } from './developer/redrive-route'
import { testEventRoute } from './developer/test-event-route'
import { isUtilityRoute, leaveOutOfRequestLog, requestLogPlugin } from './developer/request-log'
import type { GatewayClient } from '@svc/gateway-client'
import { methodTable, type AuthVerifiers, type MethodTable } from './methods'
import { errorsPlugin } from './plugins/errors'
import { lexiconMethod, xrpcPlugin } from './plugins/xrpc'
import { createCounter, createIssuerLookupGuard, createLimiter, registerRateLimitStore } from './plugins/rate-limit'
import { clientNetwork } from './plugins/client-network'
import { apiKeyHashForLimit } from './auth/api-key'
import { API_VERSION } from '@svc/vocabulary'

export const REQUEST_ID_RESPONSE_HEADER = 'Svc-Request-Id'

/**
 * The accept queue of both hosts: a crowd connecting at once (buyers at a ticket sale's opening) overflows Node's
 * default of 511, and the kernel then drops or resets connections (seen as ECONNRESET at 1,000 concurrent claims).
 * The kernel caps it at net.core.somaxconn.
 */
export const LISTEN_BACKLOG = 4096

export interface AdapterDeps {
  logger: Logger
  gateway: GatewayClient
  serviceAuth: ServiceAuthVerifier
  /** the routing table, built with the auth verifiers (tests pass their own) */
  methods?: (auth: AuthVerifiers) => MethodTable
  bodyLimit?: number
  /** creators' dashboard sessions (the checkout host's /dashboard pages) */
  dashboardSessions: DashboardSessions
  /** the public {checkout_url}: https there makes the dashboard cookie Secure */
  checkoutUrl: string
  /** SERVICE_DID and SERVICE_SIGNING_KEY: a did:web's document is served on {base_url} */
  serviceIdentity?: ServiceIdentity
  /** rate limits and card-testing counters are kept here, under `redisPrefix` */
  redis: Redis
  redisPrefix: string
  limits: AdapterLimits
  /** the proxies trusted to name the client (X-Forwarded-For): TRUST_PROXY; default none */
  trustProxy?: TrustProxy
  /** the process's metrics, shared by both hosts (docs/operations.md) */
  metrics: ProcessMetrics
  /** METRICS_TOKEN: what `/metrics` asks for */
  metricsToken: string
  /** what `/readyz` asks besides Redis (main.ts: the gateway) */
  readiness?: Record<string, ReadinessCheck>
}

/**
 * Requests are counted per NSID on /xrpc (a method the lexicons declare, as the route serves it; anything else,
 * another spelling of one included, as `unknown-nsid`).
 */
function xrpcRouteLabel(request: FastifyRequest): string | undefined {
  if (request.routeOptions.url !== '/xrpc/:nsid') return undefined
  const nsid = (request.params as { nsid?: string }).nsid ?? ''
  return lexiconMethod(nsid) ? nsid : 'unknown-nsid'
}

async function registerOperations(app: FastifyInstance, deps: AdapterDeps): Promise<void> {
  await app.register(operationsRoutes, {
    metrics: deps.metrics,
    metricsToken: deps.metricsToken,
    readiness: { redis: () => deps.redis.ping(), ...deps.readiness },
    routeLabel: xrpcRouteLabel,
  })
}

/**
 * Capabilities travel in some paths and queries (browser checkout tokens, status tokens, dashboard sign-in links,
 * ticket pages and scan tokens), and a caller may put one in any URL, or a credential (an API key, a webhook signing
 * secret, a JWT): request logs show it masked, never the secret.
 */
/** The utility routes' limit per client address, in keys' worth of the per-key limit. */
export const UTILITY_KEYS_PER_ADDRESS = 10

export function redactPath(url: string): string {
  const mask = (u: string) =>
    u
      .replace(/\b(cko|pst|dsl|dss|tkp|tkt|svc_rk)_(test_|live_)?[A-Za-z0-9_-]{8,}/g, '$1_$2[redacted]')
      .replace(/\bwhsec_[A-Za-z0-9+/=]{8,}/g, 'whsec_[redacted]')
      .replace(/\beyJ[A-Za-z0-9_-]{8,}(\.[A-Za-z0-9_-]*){0,2}/g, 'eyJ[redacted]')
      // a credential without a known shape, in a parameter whose name says what it is (?token=, ?access_token=, ?password=)
      .replace(/([?&;][^=&#]*(?:token|secret|password|passwd|auth|key|signature)[^=&#]*=)[^&#]*/gi, '$1[redacted]')
  // the router and the query parser decode what the URL percent-encodes (pst%5Ftest%5F…): mask what they see. Only
  // ASCII escapes are decoded (tokens are ASCII), so a malformed escape elsewhere cannot hide one
  const decoded = url.replace(/%([0-7][0-9A-Fa-f])/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
  const masked = mask(decoded)
  return masked === decoded ? url : masked
}

const requestSerializer = (req: { method?: string; url?: string; hostname?: string; ip?: string; id?: string }) => ({
  method: req.method,
  url: redactPath(req.url ?? ''),
  hostname: req.hostname,
  remoteAddress: req.ip,
})

/**
 * How long a client may take to send a request on the public hosts: headers within HEADERS_TIMEOUT_MS (or the request
 * timeout, if shorter), the whole request within the request timeout, else 408 and the connection closed. Node checks
 * these every `connectionsCheckingInterval` (30 s by default, which would let a slow client hold its connection up to
 * twice as long): a quarter of the shorter timeout here.
 */
const HEADERS_TIMEOUT_MS = 10_000

function requestTimeouts(requestTimeoutMs: number) {
  return {
    requestTimeout: requestTimeoutMs,
    http: {
      headersTimeout: Math.min(HEADERS_TIMEOUT_MS, requestTimeoutMs),
      connectionsCheckingInterval: Math.max(100, Math.floor(Math.min(HEADERS_TIMEOUT_MS, requestTimeoutMs) / 4)),
    },
  }
}

/**
 * What Node's HTTP parser answers itself (a request whose headers or body did not arrive in time, headers over the
 * limit, bytes that are no HTTP request): the service's `{ error, message }` with a `Svc-Request-Id` of its own, as
 * every answer of both hosts, where Fastify's default wrote its own shape and no id.
 */
function clientErrorHandler(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Duplex): void {
  // a connection reset: nothing to answer
  if (err.code === 'ECONNRESET' || socket.destroyed) return
  const [status, error, message] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'RequestTimeout', 'the request did not arrive in time']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'InvalidRequest', 'the request headers are too large']
        : [400, 'InvalidRequest', 'the request is not a valid HTTP request']
  const body = JSON.stringify({ error, message })
  const reqId = `req_${randomUUID().replace(/-/g, '')}`
  // the id the client was given is in the log too (Fastify never saw this request, so nothing else logs it)
  this.log.info({ reqId, statusCode: status, code: err.code, remoteAddress: (socket as Duplex & { remoteAddress?: string }).remoteAddress }, 'request refused before it could be read')
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${REQUEST_ID_RESPONSE_HEADER}: ${reqId}\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    )
  }
  socket.destroy(err)
}

/** The longest path segment the router reads (an NSID is at most 317 characters; a checkout token far less). */
const MAX_PARAM_LENGTH = 512

/**
 * A path the router cannot read (a malformed percent-escape, a segment longer than MAX_PARAM_LENGTH) gets what any
 * unknown path of the host gets: the invalid-link page under /checkout, the dashboard's not-found page under
 * /dashboard, else 400 InvalidRequest; with the request id, and never repeating the path (it may carry a token).
 * Fastify's own answer was a bare JSON body outside the contract, without either.
 */
function unreadablePath(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header(REQUEST_ID_RESPONSE_HEADER, request.id)
  reply.contractError = 'InvalidRequest'
  request.log.info({ code: error.code }, 'unreadable request path')
  const path = (request.raw.url ?? '').split('?')[0]!
  if (path === '/checkout' || path.startsWith('/checkout/')) void sendPage(reply, invalidLinkPage())
  else if (path === '/dashboard' || path.startsWith('/dashboard/')) void sendPage(reply, errorPage(new ContractError('NotFound', 'there is no such page')))
  else void reply.code(400).send(new ContractError('InvalidRequest', 'the request path is malformed or too long').toBody())
}

function baseServer(deps: AdapterDeps, name: string): FastifyInstance {
  const app = Fastify({
    ...requestTimeouts(deps.limits.requestTimeoutMs),
    clientErrorHandler,
    frameworkErrors: unreadablePath,
    loggerInstance: deps.logger.child({ host: name }, { serializers: { req: requestSerializer } }) as FastifyBaseLogger,
    genReqId: () => `req_${randomUUID().replace(/-/g, '')}`,
    bodyLimit: deps.bodyLimit ?? 256 * 1024,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    trustProxy: deps.trustProxy ?? false,
  })
  app.addHook('onRequest', async (request, reply) => {
    reply.header(REQUEST_ID_RESPONSE_HEADER, request.id)
  })
  return app
}

export async function buildApiServer(deps: AdapterDeps): Promise<FastifyInstance> {
  const app = baseServer(deps, 'api')
  // an app's answers (its configuration and signing secret, a payment's status) are its own: no cache keeps them
  app.addHook('onRequest', async (request, reply) => {
    // the route the router matched (a percent-encoded path reaches it too), or the raw path for one it did not
    if ((request.routeOptions.url ?? request.url).startsWith('/xrpc/')) reply.header('cache-control', 'no-store')
  })
  await app.register(errorsPlugin)
  await registerOperations(app, deps)
  app.get('/xrpc/_health', async () => ({ version: API_VERSION }))
  await app.register(didDocumentRoute, { identity: deps.serviceIdentity })
  await registerRateLimitStore(app, deps.redis, deps.redisPrefix)
  await app.register(xrpcPlugin, {
    methods: (deps.methods ?? methodTable)({ app: appServiceAuth(deps.serviceAuth) }),
    gateway: deps.gateway,
    limit: createLimiter(app, 'xrpc', deps.limits.xrpc),
    issuerLookups: createIssuerLookupGuard({ limit: deps.limits.issuerLookupsPerAddress, redis: deps.redis, redisPrefix: deps.redisPrefix, issuerToLookUp: deps.serviceAuth.issuerToLookUp }),
    assertions: assertionVerifier(deps.serviceAuth),
  })
  return app
}

/** Two years, as Stripe's checkout host: browsers reach the card form over https only, never an address typed as http. */
export const CHECKOUT_HSTS = 'max-age=63072000; includeSubDomains'

export async function buildCheckoutServer(deps: AdapterDeps): Promise<FastifyInstance> {
  const app = baseServer(deps, 'checkout')
  // behind the TLS terminator of an https CHECKOUT_URL: every answer of the host tells the browser to stay on https
  if (new URL(deps.checkoutUrl).protocol === 'https:') {
    app.addHook('onRequest', async (_request, reply) => {
      reply.header('strict-transport-security', CHECKOUT_HSTS)
    })
  }
  await app.register(errorsPlugin)
  await registerOperations(app, deps)
  await app.register(requestLogPlugin, { gateway: deps.gateway })
  app.get('/health', async () => ({ ok: true }))
  await registerRateLimitStore(app, deps.redis, deps.redisPrefix)
  const utilityLimit = createLimiter(app, 'utility', deps.limits.utility)
  // and per client address, at ten keys' worth: calls without a key, or with made-up keys (each of which would have a
  // count of its own), are refused and logged, and are not let write the request log without end
  const { max, windowMs } = deps.limits.utility
  const utilityAddressLimit = createLimiter(app, 'utility-address', { max: max * UTILITY_KEYS_PER_ADDRESS, windowMs })
  app.addHook('onRequest', async (request, reply) => {
    // the utility routes, per presented API key; a request without one is refused by its route. By the route matched,
    // not the raw URL, which may spell the same route percent-encoded (/%61pi/…)
    if (!isUtilityRoute(request)) return
    // an app's configuration and its deliveries (URLs, receivers' answers) are its own: no cache keeps them
    reply.header('cache-control', 'no-store')
    await utilityAddressLimit(request, reply, clientNetwork(request.ip)).catch((err: unknown) => {
      leaveOutOfRequestLog(request)
      throw err
    })
    const keyHash = apiKeyHashForLimit(request.headers.authorization)
    if (keyHash) await utilityLimit(request, reply, keyHash)
  })
  await app.register(developerConfigRoute, { gateway: deps.gateway })
  await app.register(testEventRoute, { gateway: deps.gateway })
  await app.register(deliveriesRoute, { gateway: deps.gateway })
  await app.register(redriveRoute, { gateway: deps.gateway })
  await app.register(checkoutPagesPlugin, {
    gateway: deps.gateway,
    payAttempts: {
      // a checkout lives at most 7 days (CHECKOUT_EXPIRY_SECONDS), so its count never ends before it does
      perCheckout: createCounter(app, 'pay-checkout', { max: deps.limits.payAttemptsPerCheckout, windowMs: 7 * 24 * 3_600_000 }),
      perAddress: createCounter(app, 'pay-address', deps.limits.payAttemptsPerAddress),
    },
  })
  await app.register(dashboardPlugin, {
    gateway: deps.gateway,
    sessions: deps.dashboardSessions,
    secureCookies: new URL(deps.checkoutUrl).protocol === 'https:',
  })
  return app
}
