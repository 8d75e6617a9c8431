/**
 * The operations routes every process serves (docs/operations.md):
 *
 *   GET /livez     200 while the process runs (a liveness probe restarts it otherwise)
 *   GET /readyz    200 when every dependency it needs answers, else 503 naming which did not (why, only with the
 *                  metrics token: an error's text may name internal addresses); once the process is closing, Fastify
 *                  answers 503 itself (or the connection is refused), so a balancer stops sending it work; every
 *                  answer from then on closes its connection
 *   GET /metrics   Prometheus text, only with `Authorization: Bearer <METRICS_TOKEN>` (else 401)
 *
 * and counts the duration of every other request it serves (`aborted` for one whose client left before its answer).
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import pTimeout from 'p-timeout'
import type { ProcessMetrics } from './metrics'

/** A dependency check: resolves when the dependency answers. */
export type ReadinessCheck = () => Promise<unknown>

export interface OperationsOptions {
  metrics: ProcessMetrics
  /** METRICS_TOKEN: what /metrics asks for (a scraper's credential, not an operator's) */
  metricsToken: string
  /** the dependencies that must answer for the process to take work (database, Redis, the gateway, …) */
  readiness: Record<string, ReadinessCheck>
  /** the label a request is counted under (default: its route pattern; unmatched: `unmatched`) */
  routeLabel?: (request: FastifyRequest) => string | undefined
  /** how long one check may take before it counts as failed (default 2 s) */
  checkTimeoutMs?: number
}

const OPERATIONS_PATHS = new Set(['/livez', '/readyz', '/metrics'])

/**
 * Once the server closes, every answer closes its connection: a keep-alive client (a balancer, a browser, the
 * gateway's pool) then sends its next request elsewhere, and its idle socket does not hold the close open until the
 * keep-alive timeout (72 s) passes the stop's budget. And a connection whose request has not fully arrived (headers
 * or body still coming) is ended at once: Node stops enforcing its headers and request timeouts when the server
 * closes, and Fastify's close ends only idle connections, so one client trickling a request held every stop until
 * SHUTDOWN_TIMEOUT_MS (exit 1, the rest of the stop never run). Such a request has had no answer and started no work;
 * one received whole is answered as before. Every process's servers have it (operationsRoutes registers it; a server
 * without those routes, the board, registers it itself).
 */
export const closingConnections = fp(
  async (app: FastifyInstance) => {
    let closing = false
    const connections = new Set<Socket>()
    /** the request each connection is on, until its answer is sent */
    const requestOn = new WeakMap<Socket, IncomingMessage>()
    app.server.on('connection', (socket: Socket) => {
      connections.add(socket)
      socket.once('close', () => connections.delete(socket))
    })
    app.server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      requestOn.set(request.socket, request)
      response.once('close', () => {
        if (requestOn.get(request.socket) === request) requestOn.delete(request.socket)
      })
    })
    app.addHook('preClose', async () => {
      closing = true
      for (const socket of connections) if (!requestOn.get(socket)?.complete) socket.destroy()
    })
    app.addHook('onSend', async (_request, reply) => {
      if (closing) reply.header('connection', 'close')
    })
  },
  { name: 'svc-closing-connections', fastify: '5.x' },
)

/**
 * A presented secret (the metrics or the operator token) against the expected one, compared as SHA-256 digests: neither the
 * comparison's time nor an early length check tells anything of the token. The gateway and the board use it too.
 */
export function sameSecret(presented: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest()
  return timingSafeEqual(digest(presented), digest(expected))
}

async function check(fn: ReadinessCheck, timeoutMs: number): Promise<string> {
  try {
    await pTimeout(fn(), { milliseconds: timeoutMs, message: `no answer within ${timeoutMs} ms` })
    return 'ok'
  } catch (err) {
    return err instanceof Error ? err.message : String(err)
  }
}

export const operationsRoutes = fp(
  async (app: FastifyInstance, opts: OperationsOptions) => {
    // probes come every few seconds from every scraper and balancer: two info lines each, in every process, for ever
    const quiet = { logLevel: 'warn' as const }
    app.get('/livez', quiet, async () => ({ ok: true }))

    /** the request carries the metrics token (a scraper's or an operator's probe) */
    const withMetricsToken = (request: FastifyRequest): boolean => {
      const token = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1]
      return token !== undefined && sameSecret(token, opts.metricsToken)
    }

    const names = Object.keys(opts.readiness)
    // probes arriving while the checks run share them: the public hosts serve /readyz to anyone, and a flood of probes
    // would otherwise make as many Redis pings and gateway requests
    let running: Promise<string[]> | null = null
    const checkAll = () =>
      (running ??= Promise.all(names.map((name) => check(opts.readiness[name]!, opts.checkTimeoutMs ?? 2000))).finally(() => {
        running = null
      }))

    app.get('/readyz', quiet, async (request, reply) => {
      const results = await checkAll()
      // the public hosts serve this too: without the token a failed check says only that it failed
      const detailed = results.some((r) => r !== 'ok') && withMetricsToken(request)
      const checks = Object.fromEntries(names.map((name, i) => [name, results[i] === 'ok' || detailed ? results[i] : 'unavailable']))
      const ok = results.every((r) => r === 'ok')
      return reply.code(ok ? 200 : 503).send({ ok, checks })
    })

    app.get('/metrics', quiet, async (request, reply) => {
      if (!withMetricsToken(request)) {
        return reply.code(401).send({ error: 'Unauthorized', message: 'metrics need the metrics token: Authorization: Bearer <METRICS_TOKEN>' })
      }
      return reply.type(opts.metrics.registry.contentType).send(await opts.metrics.registry.metrics())
    })

    await app.register(closingConnections)

    const observe = (request: FastifyRequest, status: string, seconds: number) => {
      const pattern = request.routeOptions.url
      if (pattern && OPERATIONS_PATHS.has(pattern)) return
      const route = opts.routeLabel?.(request) ?? pattern ?? 'unmatched'
      opts.metrics.httpDuration.observe({ method: request.method, route, status }, seconds)
    }
    app.addHook('onResponse', async (request, reply) => {
      observe(request, String(reply.statusCode), reply.elapsedTime / 1000)
    })
    // a request whose client hung up before its answer was written (a caller's deadline: the gateway's for a
    // subgraph, an app's) gets no onResponse: counted as `aborted`, with the time it had run, or the slowest requests
    // would be missing from the hop that was slow
    app.addHook('onRequest', async (request, reply) => {
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) observe(request, 'aborted', reply.elapsedTime / 1000)
      })
    })
  },
  { name: 'svc-operations', fastify: '5.x' },
)
