/**
 * The adapter's client for the GraphQL gateway: one keep-alive undici pool, the adapter credential,
 * the principal the adapter established, and the request id. GraphQL errors carrying a contract code
 * come back as that ContractError (the first such error of the response); anything else is an internal failure.
 */
import { Pool } from 'undici'
import type { FastifyBaseLogger as Logger } from 'fastify'
import { ContractError, isErrorCode } from '@svc/errors'
import { REQUEST_ID_HEADER, type Principal } from '@svc/internal-context'
import { SERVICE_PRINCIPALS } from '@svc/vocabulary'

/** The adapter acting on its own behalf (the request log, writes after a checked call): the internal service `xrpc-adapter`. */
export const ADAPTER_PRINCIPAL: Principal = { kind: 'service', name: SERVICE_PRINCIPALS.xrpcAdapter }

export interface GatewayClient {
  query<T>(document: string, variables: Record<string, unknown>, as: { principal: Principal; requestId: string; log: Logger }): Promise<T>
  close(): Promise<void>
}

interface GraphQLResponse<T> {
  data?: T | null
  errors?: { message: string; extensions?: { code?: unknown } }[]
}

export function createGatewayClient(opts: { url: string; token: string; connections?: number }): GatewayClient {
  const url = new URL(opts.url)
  const pool = new Pool(url.origin, { connections: opts.connections ?? 64, pipelining: 1 })
  return {
    async query<T>(document: string, variables: Record<string, unknown>, as: { principal: Principal; requestId: string; log: Logger }) {
      let body: GraphQLResponse<T>
      try {
        const res = await pool.request({
          path: url.pathname,
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${opts.token}`,
            'svc-caller': JSON.stringify(as.principal),
            [REQUEST_ID_HEADER]: as.requestId,
          },
          body: JSON.stringify({ query: document, variables }),
        })
        body = (await res.body.json()) as GraphQLResponse<T>
      } catch (err) {
        as.log.error({ err }, 'gateway unreachable')
        throw new ContractError('ServiceUnavailable', 'the service is temporarily unavailable; retry with backoff')
      }
      if (body.errors?.length) {
        // The first error carrying a contract code wins. When a subgraph refuses inside an entity call (the actors
        // subgraph's fields on AppAccess), mercurius lists its own null-parent TypeError first and the subgraph's
        // coded error (path `_entities…`) after it.
        const coded = body.errors.find((e) => isErrorCode(e.extensions?.code))
        const code = coded?.extensions?.code
        if (coded && isErrorCode(code) && code !== 'InternalServerError') throw new ContractError(code, coded.message)
        as.log.error({ errors: body.errors }, 'gateway returned an unexpected error')
        throw new ContractError('InternalServerError', 'internal error')
      }
      if (body.data == null) throw new ContractError('InternalServerError', 'internal error')
      return body.data
    },
    close: () => pool.close(),
  }
}
