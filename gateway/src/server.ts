/**
 * The GraphQL gateway: mercurius composing the domain subgraphs (Apollo Federation v1), for the XRPC
 * adapter, the workers, the domains and internal dashboards. It authenticates its caller (principal.ts), then
 * forwards the caller's signed internal context to every subgraph request (subgraphs refuse requests without one).
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import mercuriusGateway from '@mercuriusjs/gateway'
import type { Logger } from 'pino'
import { randomUUID } from 'node:crypto'
import { CONTEXT_HEADER, REQUEST_ID_HEADER, signContext, type CallerKeys } from '@svc/internal-context'
import { createMetrics, operationsRoutes, type ProcessMetrics } from '@svc/operations'
import { authenticate, type Authenticated } from './principal'
import { formatGatewayErrors } from './subgraph-failures'
import { createSubgraphAgent } from './subgraph-agent'
import { costWithVariables, LIMITS_BY_VARIABLE, maxQueryCost, type VariableValues } from './query-cost'

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Authenticated
  }
}

export interface GatewayOptions {
  services: { name: string; url: string }[]
  /** every caller's context key (to verify), OPERATOR_TOKEN (operators' bearer), METRICS_TOKEN (`/metrics`) */
  secrets: { callerKeys: CallerKeys; operatorToken: string; metricsToken: string }
  graphiql: boolean
  logger: Logger
  /** how many times a subgraph that did not answer at start is asked again, a second apart (default: until it answers) */
  retryServicesCount?: number
  /** the process's metrics (docs/operations.md); a registry of its own when not given */
  metrics?: ProcessMetrics
  /** how long a subgraph may take to answer (SUBGRAPH_TIMEOUT_MS); default 30 s */
  subgraphTimeoutMs?: number
}

const GRAPHQL_PATH = '/graphql'
const SUBGRAPH_TIMEOUT_MS = 30_000

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

/** A caller's request id is kept when it looks like one of ours (the adapter's `req_…`, a UUID, a delivery attempt's `whd_….3`). */
const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/

/** The request line logged: its path only (mercurius serves GET /graphql?query=…&variables=…, which may carry anything; a crafted request may send a `#…`). */
const requestSerializer = (req: { method?: string; url?: string; ip?: string }) => ({ method: req.method, url: (req.url ?? '').split(/[?#]/)[0], remoteAddress: req.ip })

/**
 * The most tokens a GraphQL document may have: the service's own have under 100, GraphiQL's introspection query 184.
 * graphql's overlap rule compares every pair of repeated fields before the cost rule runs: 2,000 copies of one field
 * held the event loop 5 s; the 500 that fit in this many tokens, a few hundredths of that.
 */
export const MAX_DOCUMENT_TOKENS = 2_000

export async function buildGateway(opts: GatewayOptions): Promise<FastifyInstance> {
  const app = Fastify({
    // above the adapter's 256 KiB (a request it takes, with its document, must pass) and under the subgraphs' 1 MiB
    // (a request the gateway takes must fit when it forwards it)
    bodyLimit: 512 * 1024,
    loggerInstance: opts.logger.child({}, { serializers: { req: requestSerializer } }) as FastifyBaseLogger,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = header(req.headers[REQUEST_ID_HEADER])
      return given && REQUEST_ID.test(given) ? given : randomUUID()
    },
  })

  app.get('/health', async () => ({ ok: true, services: opts.services.map((s) => s.name) }))
  // Fastify's own 404 logs "Route GET:<url> not found", the query (which may carry a token) included
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'NotFound', message: 'no such route' }))
  // Ready once the schema is composed from every subgraph: one that did not answer at start is left out of the schema
  // (its fields are unknown) and asked again each second until it answers. Once composed, a subgraph that goes down
  // fails only the requests that need it, so it does not take the gateway out of the balancer.
  let missing: string[] = opts.services.map((s) => s.name)
  const composed = async () => {
    if (missing.length > 0) throw new Error(`the schema is not composed yet: waiting for ${missing.join(', ')}`)
  }
  await app.register(operationsRoutes, { metrics: opts.metrics ?? createMetrics('gateway'), metricsToken: opts.secrets.metricsToken, readiness: { schema: composed } })

  app.addHook('onRequest', async (request, reply) => {
    // Decided on the route matched, not the raw URL or method: mercurius also serves GET /graphql?query=…,
    // and `/%67raphql` reaches the same handler.
    if (request.routeOptions.url !== GRAPHQL_PATH) return
    const caller = authenticate(
      opts.secrets,
      {
        context: header(request.headers[CONTEXT_HEADER]),
        authorization: header(request.headers.authorization),
        operatorId: header(request.headers['svc-operator-id']),
      },
      request.id,
    )
    if (!caller) {
      return reply.code(401).send({ error: 'Unauthorized', message: 'the gateway needs a signed internal context or the operator credential' })
    }
    request.caller = caller
    reply.header(REQUEST_ID_HEADER, request.id)
  })

  const subgraphTimeoutMs = opts.subgraphTimeoutMs ?? SUBGRAPH_TIMEOUT_MS
  const agents = opts.services.map((service) => createSubgraphAgent(service.url, { connections: 32, timeoutMs: subgraphTimeoutMs }))
  // mercurius leaves an agent it was given open: closed after the gateway (the listener first, then the pools)
  app.addHook('onClose', async () => {
    await Promise.allSettled(agents.map((agent) => agent.destroy()))
  })

  await app.register(mercuriusGateway, {
    path: GRAPHQL_PATH,
    graphiql: opts.graphiql,
    jit: 1,
    errorFormatter: formatGatewayErrors,
    validationRules: [maxQueryCost],
    // the cost rule runs with graphql's own rules, after them in the same pass: a document of 90,000 repeated fields
    // would keep the overlap rule busy for minutes first, so documents are bounded before validation
    graphql: { parseOptions: { maxTokens: MAX_DOCUMENT_TOKENS } },
    gateway: {
      retryServicesCount: opts.retryServicesCount ?? Number.POSITIVE_INFINITY,
      retryServicesInterval: 1000,
      services: opts.services.map((service, i) => ({
        name: service.name,
        url: service.url,
        mandatory: true,
        agent: agents[i] as never,
        initHeaders: () => ({
          [CONTEXT_HEADER]: signContext(
            { issuer: 'gateway', key: opts.secrets.callerKeys.gateway },
            { principal: { kind: 'gateway' }, requestId: `init-${randomUUID()}` },
          ),
        }),
        rewriteHeaders: (_headers: unknown, context: { reply?: { request?: { caller?: Authenticated; id: string } } }) => {
          const request = context?.reply?.request
          if (!request?.caller) return {}
          return { [CONTEXT_HEADER]: request.caller.context, [REQUEST_ID_HEADER]: request.id }
        },
      })),
    },
  })
  // mercurius marks a subgraph whose schema it could not read with `error` (not in its types)
  missing = Object.entries(app.graphqlGateway.serviceMap)
    .filter(([, service]) => (service as { error?: unknown }).error)
    .map(([name]) => name)
  if (missing.length > 0) {
    app.log.warn({ services: missing }, 'gateway: subgraphs did not answer; not ready until they do')
    // a retry replaces the schema only once every subgraph answered
    app.graphqlGateway.addHook('onGatewayReplaceSchema', async () => {
      app.log.info({ services: missing }, 'gateway: schema composed with every subgraph')
      missing = []
    })
  }
  // a query that is not GraphQL text mercurius would take as a JSON AST, read around the token limit: refused (any
  // JSON value: no GraphQL text parses as JSON, and `1` or `true` would reach validation as a broken AST)
  app.graphql.addHook('preParsing', async (_schema, source) => {
    if (typeof source !== 'string' || isJson(source)) throw Object.assign(new Error('the query must be GraphQL text'), { statusCode: 400 })
  })
  // a `limit` given by a variable is costed with the request's value (validation, cached per text, sees none)
  app.graphql.addHook('preExecution', async (schema, document, _context, variables) => {
    if (!LIMITS_BY_VARIABLE.has(document)) return
    const tooCostly = costWithVariables(schema, document, variables as VariableValues | undefined)
    if (tooCostly) throw Object.assign(new Error(tooCostly.message), { statusCode: 400 })
  })
  return app
}

function isJson(source: string): boolean {
  try {
    JSON.parse(source)
    return true
  } catch {
    return false
  }
}
