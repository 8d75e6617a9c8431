/**
 * The GraphQL gateway: mercurius composing the domain subgraphs (Apollo Federation v1), for the XRPC
 * adapter and internal dashboards. It authenticates its caller, then forwards a signed internal
 * context to every subgraph request (subgraphs refuse requests without one).
 */
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import mercuriusGateway from '@mercuriusjs/gateway'
import type { Logger } from 'pino'
import { randomUUID } from 'node:crypto'
import { CONTEXT_HEADER, REQUEST_ID_HEADER, signContext, type Principal } from '@svc/internal-context'
import { CALLER_HEADER } from '@svc/gateway-client'
import { authenticate } from './principal'

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal
  }
}

export interface GatewayOptions {
  services: { name: string; url: string }[]
  secrets: { internalContext: string; adapterGatewayToken: string; eventsGatewayToken: string; operatorToken: string }
  graphiql: boolean
  logger: Logger
  /** retries while subgraphs start (the dev command starts everything at once) */
  retryServicesCount?: number
}

const GRAPHQL_PATH = '/graphql'

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}

export async function buildGateway(opts: GatewayOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: opts.logger as FastifyBaseLogger,
    requestIdHeader: REQUEST_ID_HEADER,
    genReqId: () => randomUUID(),
  })

  app.get('/health', async () => ({ ok: true, services: opts.services.map((s) => s.name) }))

  app.addHook('onRequest', async (request, reply) => {
    // Decided on the route matched, not the raw URL or method: mercurius also serves GET /graphql?query=…,
    // and `/%67raphql` reaches the same handler.
    if (request.routeOptions.url !== GRAPHQL_PATH) return
    const principal = authenticate(opts.secrets, {
      authorization: header(request.headers.authorization),
      caller: header(request.headers[CALLER_HEADER]),
      operatorId: header(request.headers['svc-operator-id']),
    })
    if (!principal) {
      return reply.code(401).send({ error: 'Unauthorized', message: 'the gateway needs the adapter or operator credential' })
    }
    request.principal = principal
    reply.header(REQUEST_ID_HEADER, request.id)
  })

  await app.register(mercuriusGateway, {
    path: GRAPHQL_PATH,
    graphiql: opts.graphiql,
    jit: 1,
    gateway: {
      retryServicesCount: opts.retryServicesCount ?? 20,
      retryServicesInterval: 500,
      services: opts.services.map((service) => ({
        name: service.name,
        url: service.url,
        mandatory: true,
        connections: 32,
        initHeaders: () => ({
          [CONTEXT_HEADER]: signContext(opts.secrets.internalContext, { principal: { kind: 'gateway' }, requestId: `init-${randomUUID()}` }),
        }),
        rewriteHeaders: (_headers: unknown, context: { reply?: { request?: { principal?: Principal; id: string } } }) => {
          const request = context?.reply?.request
          if (!request?.principal) return {}
          return {
            [CONTEXT_HEADER]: signContext(opts.secrets.internalContext, { principal: request.principal, requestId: request.id }),
            [REQUEST_ID_HEADER]: request.id,
          }
        },
      })),
    },
  })
  return app
}
