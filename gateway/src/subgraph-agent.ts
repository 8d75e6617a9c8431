/**
 * The connection pool the gateway asks a subgraph through. Mercurius reads any JSON answer as a GraphQL one: an error
 * status whose JSON body has no `data` or `errors` (Fastify's own 503 while a subgraph drains at a restart, a 413, a 404) then fails
 * later in the gateway as a TypeError, which its callers answer 500. Here such an answer is a failed request, which
 * the gateway answers ServiceUnavailable like a refused connection (subgraph-failures.ts).
 */
import { Pool } from 'undici'

type PoolRequest = Parameters<Pool['request']>[0]

/** An answer mercurius can read: the body already read, as text. */
interface ReadAnswer {
  statusCode: number
  headers: Record<string, string | string[] | undefined>
  body: { text(): Promise<string> }
}

function isGraphQLAnswer(text: string): boolean {
  try {
    const json = JSON.parse(text) as unknown
    return typeof json === 'object' && json !== null && ('data' in json || 'errors' in json)
  } catch {
    // not JSON: mercurius's own parse fails it as a transport failure already
    return true
  }
}

export interface SubgraphAgent {
  request(opts: PoolRequest): Promise<ReadAnswer>
  destroy(): Promise<void>
}

/** The largest answer a subgraph may give (the largest the service asks for, a page of 5,000 tickets, is about 2 MB). */
export const MAX_SUBGRAPH_ANSWER_BYTES = 16 * 1024 * 1024

/**
 * Each request has `timeoutMs` in all, from the moment it is asked (its wait for a connection of the pool counts: a
 * slow subgraph's queue would otherwise grow without end and its requests be sent long after their callers gave up),
 * and an answer over MAX_SUBGRAPH_ANSWER_BYTES fails: both as a transport failure, answered ServiceUnavailable.
 */
export function createSubgraphAgent(url: string, opts: { connections: number; timeoutMs: number }): SubgraphAgent {
  const pool = new Pool(new URL(url).origin, {
    connections: opts.connections,
    headersTimeout: opts.timeoutMs,
    bodyTimeout: opts.timeoutMs,
    maxResponseSize: MAX_SUBGRAPH_ANSWER_BYTES,
    keepAliveMaxTimeout: 5000,
  })
  return {
    async request(req) {
      const deadline = AbortSignal.timeout(opts.timeoutMs)
      // the deadline's abort is a DOMException, which the gateway would not take for a transport failure: said plainly
      const late = (err: unknown) => {
        throw deadline.aborted ? new Error(`the subgraph did not answer within ${opts.timeoutMs} ms`, { cause: err }) : err
      }
      const res = await pool.request({ ...req, signal: req.signal ? AbortSignal.any([req.signal as AbortSignal, deadline]) : deadline }).catch(late)
      // a subgraph's own answers that are not 2xx carry `errors` (a 400 for a bad document); only those are read
      // here, so the answers on the hot path are parsed once, by mercurius
      if (res.statusCode < 400) return { statusCode: res.statusCode, headers: res.headers, body: { text: () => res.body.text().catch(late) } }
      const text = await res.body.text().catch(late)
      if (!isGraphQLAnswer(text)) throw new Error(`the subgraph answered HTTP ${res.statusCode} without a GraphQL answer`)
      return { statusCode: res.statusCode, headers: res.headers, body: { text: async () => text } }
    },
    destroy: () => pool.destroy(),
  }
}
