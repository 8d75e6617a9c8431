/**
 * The client every process uses to call the GraphQL gateway (the XRPC adapter, its pages, the events workers, and the
 * domains that read another domain's facts): one keep-alive undici pool, and on every call one internal context
 * signed with the process's own key, stating the principal it calls as and the request id; the gateway and then the
 * subgraph that serves the call verify it. A GraphQL error
 * carrying a contract code comes back as that ContractError (the first such error of the answer); a gateway that
 * cannot be reached or answers something other than GraphQL is GatewayUnavailableError (ServiceUnavailable); anything
 * else is an internal failure.
 */
import { Pool } from 'undici'
import type { DocumentTypeDecoration } from '@graphql-typed-document-node/core'
import { ContractError, isErrorCode } from '@svc/errors'
import { CONTEXT_HEADER, REQUEST_ID_HEADER, signContext, type ContextSigner, type Principal } from '@svc/internal-context'

export interface GatewayCall {
  principal: Principal
  requestId: string
  /** where an unexpected answer is logged (pino or Fastify's request logger) */
  log?: CallLogger
}

/** pino's, or Fastify's request logger */
type CallLogger = { error(obj: object, msg: string): void; warn(obj: object, msg: string): void }

/**
 * A document for the gateway: a `graphql(`…`)` from @svc/graph, whose result and variables are typed from the composed
 * schema (a plain string is taken too, typed by the caller).
 */
export type GatewayDocument<TResult, TVariables> = DocumentTypeDecoration<TResult, TVariables> | string

export interface GatewayClient {
  query<TResult, TVariables = Record<string, unknown>>(document: GatewayDocument<TResult, TVariables>, variables: TVariables, as: GatewayCall): Promise<TResult>
  close(): Promise<void>
}

export interface GatewayClientOptions {
  /** the gateway's GraphQL URL */
  url: string
  /** this process's issuer name and key */
  signer: ContextSigner
  connections?: number
  /** how long the gateway may take to answer; default undici's (300 s) */
  timeoutMs?: number
  /** where a failed call is logged, with its request id, when the call brings no logger of its own */
  logger?: CallLogger
}

/** The gateway could not be reached or did not answer GraphQL; `reason` says how (a socket error code or `HTTP 502`). */
export class GatewayUnavailableError extends ContractError {
  constructor(readonly reason: string) {
    super('ServiceUnavailable', 'the service is temporarily unavailable; retry with backoff')
  }
}

interface GraphQLAnswer<T> {
  data?: T | null
  errors?: { message: string; extensions?: { code?: unknown } }[]
}

export function createGatewayClient(opts: GatewayClientOptions): GatewayClient {
  const url = new URL(opts.url)
  const pool = new Pool(url.origin, { connections: opts.connections ?? 64, pipelining: 1 })
  const timeouts = opts.timeoutMs ? { headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs } : {}

  /** the call's logger, or the client's with the call's request id */
  const logOf = (as: GatewayCall): GatewayCall['log'] =>
    as.log ??
    (opts.logger
      ? { error: (obj, msg) => opts.logger!.error({ reqId: as.requestId, ...obj }, msg), warn: (obj, msg) => opts.logger!.warn({ reqId: as.requestId, ...obj }, msg) }
      : undefined)

  async function post<T>(document: string, variables: unknown, as: GatewayCall): Promise<GraphQLAnswer<T>> {
    // a principal this process may not state is a programming error, thrown before anything is sent
    const context = signContext(opts.signer, as)
    let status: number
    let text: string
    try {
      const res = await pool.request({
        path: url.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [CONTEXT_HEADER]: context,
          [REQUEST_ID_HEADER]: as.requestId,
        },
        body: JSON.stringify({ query: document, variables }),
        ...timeouts,
      })
      status = res.statusCode
      text = await res.body.text()
    } catch (err) {
      const code = (err as { code?: unknown }).code
      // answered 503 (try again), not a defect: a gateway restarting is an outage to see, not an error per request
      logOf(as)?.warn({ err }, 'gateway unreachable')
      throw new GatewayUnavailableError(typeof code === 'string' ? code : 'unreachable')
    }
    if (status === 401) {
      // the gateway refused this process's signed context (a key it does not know, a clock too far apart): a
      // deployment fault every call of this process meets, said once per call rather than as an unexplained 500
      logOf(as)?.error({ status, answer: text.slice(0, 200) }, 'the gateway refused this process\'s context: check its key (*_CONTEXT_KEY) and the clock')
      throw new ContractError('InternalServerError', 'internal error')
    }
    try {
      return JSON.parse(text) as GraphQLAnswer<T>
    } catch {
      logOf(as)?.error({ status }, 'gateway answered something other than GraphQL')
      throw new GatewayUnavailableError(`HTTP ${status}`)
    }
  }

  return {
    async query<TResult, TVariables>(document: GatewayDocument<TResult, TVariables>, variables: TVariables, as: GatewayCall) {
      const answer = await post<TResult>(String(document), variables, as)
      if (answer.errors?.length) {
        // The first error carrying a contract code wins. When a subgraph refuses inside an entity call, mercurius
        // lists its own null-parent TypeError first and the subgraph's coded error (path `_entities…`) after it.
        const coded = answer.errors.find((e) => isErrorCode(e.extensions?.code))
        const code = coded?.extensions?.code
        if (coded && isErrorCode(code) && code !== 'InternalServerError') throw new ContractError(code, coded.message)
        logOf(as)?.error({ errors: answer.errors }, 'gateway returned an unexpected error')
        throw new ContractError('InternalServerError', 'internal error')
      }
      if (answer.data == null) {
        logOf(as)?.error({ answer: JSON.stringify(answer).slice(0, 200) }, 'gateway answered neither data nor errors')
        throw new ContractError('InternalServerError', 'internal error')
      }
      return answer.data
    },
    close: () => pool.close(),
  }
}
