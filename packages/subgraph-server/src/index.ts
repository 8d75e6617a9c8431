/**
 * What every domain subgraph shares: an Apollo Server over a Federation v1 subgraph schema that
 * refuses any request without a valid gateway-signed context, a request-scoped pino logger, and
 * error formatting that keeps contract error codes and hides everything else. It is served by Fastify
 * (@as-integrations/fastify) on `/graphql`, beside the operations routes every process has (`/livez`, `/readyz`,
 * `/metrics`: docs/operations.md).
 */
import { ApolloServer, type ApolloServerPlugin } from '@apollo/server'
import { ApolloServerPluginInlineTraceDisabled } from '@apollo/server/plugin/disabled'
import fastifyApollo from '@as-integrations/fastify'
import Fastify from 'fastify'
import type { AddressInfo } from 'node:net'
import { unwrapResolverError } from '@apollo/server/errors'
import { buildSubgraphSchema } from '@apollo/subgraph'
import type { GraphQLResolverMap } from '@apollo/subgraph'
import { GraphQLError, print, type DocumentNode, type GraphQLFormattedError } from 'graphql'
import mongoose, { type Connection, type ConnectOptions } from 'mongoose'
import pino, { type Logger } from 'pino'
import { ContractError, contractExtensions } from '@svc/errors'
import { CONTEXT_HEADER, verifyContext, type CallerKeys, type Principal } from '@svc/internal-context'
import { createMetrics, isRedisUnavailable, observeDatabaseCommands, operationsRoutes, type ProcessMetrics, type ReadinessCheck } from '@svc/operations'
import { isDatabaseAway, isDatabaseUnreachable } from './database-errors'
import { watchDatabase } from './database-watch'

export interface SubgraphContext {
  principal: Principal
  requestId: string
  log: Logger
}

export interface SubgraphOptions<TContext extends SubgraphContext> {
  name: string
  typeDefs: DocumentNode
  resolvers: GraphQLResolverMap<TContext>
  callerKeys: CallerKeys
  logger: Logger
  /** extra per-request context on top of principal, requestId and log */
  extendContext?: (base: SubgraphContext) => TContext | Promise<TContext>
  /** METRICS_TOKEN, which `/metrics` asks for (without it `/metrics` answers no one) */
  metricsToken?: string
  /** DB_COMMAND_METRICS: time every database command for `/metrics` (the driver's command monitoring: it costs) */
  databaseCommandMetrics?: boolean
}

export interface RunningSubgraph {
  url: string
  stop(): Promise<void>
}

/**
 * The most tokens of a document a subgraph parses: twice the gateway's bound on what it is sent (2,000), as the
 * gateway's plans add the `_entities` wrapper and the key fields and `__typename` of each type to a caller's selection.
 */
export const MAX_DOCUMENT_TOKENS = 4_000

/**
 * PostgreSQL (under FerretDB) stores and compares no NUL (U+0000) in text: a filter or a document holding one is
 * refused by the database, which is the caller's input, not a fault of ours (MongoDB takes it). The adapter refuses
 * NUL on /xrpc; this answers the rest (an operator's query naming one) InvalidRequest rather than an internal error.
 */
function isNulRefused(original: unknown): boolean {
  return original instanceof Error && /unsupported Unicode escape sequence|SQLSTATE 22P05/.test(original.message)
}

/** What a resolver's error is to the caller: its own contract error, or one of ours (unavailable, unexpected). */
function kindOf(original: unknown): 'contract' | 'nul' | 'database' | 'redis' | 'unexpected' {
  if (original instanceof ContractError) return 'contract'
  if (isNulRefused(original)) return 'nul'
  if (isDatabaseUnreachable(original)) return 'database'
  if (isRedisUnavailable(original)) return 'redis'
  return 'unexpected'
}

const CALLER_ERRORS = new Set(['GRAPHQL_VALIDATION_FAILED', 'BAD_USER_INPUT', 'GRAPHQL_PARSE_FAILED', 'UNAUTHENTICATED', 'BAD_REQUEST'])

/**
 * Keeps ContractError codes for the adapter; a database that cannot be reached, or a Redis that cannot take commands
 * now (a failover, a restart), is ServiceUnavailable; hides other unexpected errors behind InternalServerError. The
 * errors of ours are logged with the request's logger (errorLogging, below).
 */
export function formatSubgraphError() {
  return (formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError => {
    const original = unwrapResolverError(error)
    const code = formatted.extensions?.code
    const kind = kindOf(original)
    if (kind === 'contract') {
      return { message: (original as ContractError).message, path: formatted.path, extensions: contractExtensions((original as ContractError).code) }
    }
    if (code === 'GRAPHQL_VALIDATION_FAILED' || code === 'BAD_USER_INPUT' || code === 'GRAPHQL_PARSE_FAILED') {
      return { message: formatted.message, extensions: { ...contractExtensions('InvalidRequest'), graphqlCode: code } }
    }
    if (code === 'UNAUTHENTICATED' || code === 'BAD_REQUEST') return formatted
    if (kind === 'nul') return { message: 'a string must not contain the NUL character (U+0000)', path: formatted.path, extensions: contractExtensions('InvalidRequest') }
    if (kind === 'database' || kind === 'redis') {
      return { message: 'the service is briefly unavailable; retry with backoff', path: formatted.path, extensions: contractExtensions('ServiceUnavailable') }
    }
    return { message: 'internal error', path: formatted.path, extensions: contractExtensions('InternalServerError') }
  }
}

/** Logs an error answered as ServiceUnavailable or InternalServerError; a caller's own error is not logged. */
function logAnswered(log: Logger, error: GraphQLError | Error): void {
  if (CALLER_ERRORS.has(String((error as GraphQLError).extensions?.code))) return
  const original = unwrapResolverError(error)
  const kind = kindOf(original)
  if (kind === 'database') log.warn({ err: original }, 'the database cannot be reached')
  else if (kind === 'redis') log.warn({ err: original }, 'redis cannot take commands now')
  else if (kind === 'unexpected') log.error({ err: original }, 'unexpected resolver error')
}

/**
 * Logs the errors a request answers as ServiceUnavailable or InternalServerError with the request's logger (its
 * `reqId`, so the line meets the adapter's and the gateway's); a request whose context could not be built logs with
 * the process's.
 */
export function errorLogging<TContext extends SubgraphContext>(root: Logger): ApolloServerPlugin<TContext> {
  return {
    async contextCreationDidFail({ error }) {
      logAnswered(root, error)
    },
    async requestDidStart() {
      return {
        async didEncounterErrors({ contextValue, errors }) {
          for (const error of errors) logAnswered((contextValue as TContext | undefined)?.log ?? root, error)
        },
      }
    },
  }
}

/**
 * The operations Apollo is executing, for the stop to wait on. Fastify's close waits for open connections, not for
 * handlers: a request whose caller hung up (the gateway's deadline, the gateway's own stop) keeps running, and the
 * domain would close its database and relay under it (a payment mid-charge, tickets mid-issue) and exit 0.
 */
export function operationsInFlight<TContext extends SubgraphContext>() {
  let running = 0
  const idle: (() => void)[] = []
  const plugin: ApolloServerPlugin<TContext> = {
    async requestDidStart() {
      running++
      let ended = false
      return {
        // called once the operation's answer is made, whether or not anyone is still there to take it
        async willSendResponse() {
          if (ended) return
          ended = true
          if (--running === 0) for (const resolve of idle.splice(0)) resolve()
        },
      }
    },
  }
  return {
    plugin,
    running: () => running,
    drained: (): Promise<void> => (running === 0 ? Promise.resolve() : new Promise((resolve) => idle.push(resolve))),
  }
}

export function buildSubgraphServer<TContext extends SubgraphContext>(opts: SubgraphOptions<TContext>) {
  // Federation v1 composition reads `_service { sdl }` as the subgraph wrote it. @apollo/subgraph 2.15 also
  // publishes the empty definitions it synthesizes for types the subgraph only extends (`type App` beside
  // `extend type App`), and the mercurius gateway lets such an empty definition replace the owning
  // subgraph's type, hiding its fields. So the SDL published is exactly the typeDefs.
  const sdl = print(opts.typeDefs)
  const userQuery = (opts.resolvers as Record<string, unknown>).Query as Record<string, unknown> | undefined
  const resolvers = { ...opts.resolvers, Query: { ...userQuery, _service: () => ({ sdl }) } } as GraphQLResolverMap<unknown>
  const schema = buildSubgraphSchema([{ typeDefs: opts.typeDefs, resolvers }])
  const inFlight = operationsInFlight<TContext>()
  const plugins: ApolloServerPlugin<TContext>[] = [ApolloServerPluginInlineTraceDisabled(), errorLogging(opts.logger), inFlight.plugin]
  const server = new ApolloServer<TContext>({
    schema,
    plugins,
    // only the gateway calls a subgraph, with documents it planned from the caller's (which it bounds): the same bound
    // here keeps any holder of a context key from holding the process in validation (20,000 `__typename` took 17 s),
    // and composition reads `_service`, not introspection
    introspection: false,
    parseOptions: { maxTokens: MAX_DOCUMENT_TOKENS },
    includeStacktraceInErrorResponses: false,
    formatError: formatSubgraphError(),
    // its own lines (a request during the stop, a startup failure) as the process's others, not plain text on the console
    logger: opts.logger,
    // the process stops it (runProcess): after Fastify has drained, never before (a request arriving meanwhile was a 500)
    stopOnTerminationSignals: false,
  })
  const context = async ({ req }: { req: { headers: Record<string, string | string[] | undefined> } }): Promise<TContext> => {
    const raw = req.headers[CONTEXT_HEADER]
    const verified = verifyContext(opts.callerKeys, Array.isArray(raw) ? raw[0] : raw)
    if (!verified.ok) {
      throw new GraphQLError(`subgraph ${opts.name} accepts only requests whose context this service signed (${verified.reason})`, {
        extensions: { code: 'UNAUTHENTICATED', http: { status: 401 } },
      })
    }
    const { principal, requestId } = verified.context
    const base: SubgraphContext = { principal, requestId, log: opts.logger.child({ reqId: requestId, principal: principal.kind }) }
    return opts.extendContext ? opts.extendContext(base) : (base as TContext)
  }
  return { server, context, inFlight }
}

export async function startSubgraph<TContext extends SubgraphContext>(
  opts: SubgraphOptions<TContext> & { host: string; port: number; metrics?: ProcessMetrics; readiness?: Record<string, ReadinessCheck> },
): Promise<RunningSubgraph> {
  const { server, context, inFlight } = buildSubgraphServer(opts)
  // no request lines here (the adapter and the gateway log each request, with its id); resolvers log through the
  // request context's logger
  const app = Fastify({ bodyLimit: 1024 * 1024 })
  await server.start()
  await app.register(operationsRoutes, {
    metrics: opts.metrics ?? createMetrics(`subgraph-${opts.name}`),
    metricsToken: opts.metricsToken ?? '',
    readiness: opts.readiness ?? {},
  })
  await app.register(fastifyApollo(server), { path: '/graphql', context: (request) => context({ req: request }) })
  await app.listen({ host: opts.host, port: opts.port })
  const { port } = app.server.address() as AddressInfo
  const url = `http://${opts.host}:${port}/graphql`
  opts.logger.info({ url }, `subgraph ${opts.name} listening`)
  return {
    url,
    async stop() {
      await app.close()
      if (inFlight.running() > 0) {
        opts.logger.info({ operations: inFlight.running() }, `subgraph ${opts.name}: waiting for the operations still running (their callers left)`)
        await inFlight.drained()
      }
      await server.stop()
    },
  }
}

/** How long a process that starts while its database is away (restarting, failing over) keeps trying. */
export const DATABASE_START_WAIT_MS = 60_000

/**
 * `fn` (a start-up step that reads or writes the database), run again while the database is away, for up to
 * `waitMs`; any other error, or the database still away after that, is thrown. A process started during a database
 * restart (a supervisor restarting it, a fault) then waits instead of exiting.
 */
export async function whileDatabaseAway<T>(fn: () => Promise<T>, opts: { what: string; logger?: Pick<Logger, 'warn'>; waitMs?: number }): Promise<T> {
  const deadline = Date.now() + (opts.waitMs ?? DATABASE_START_WAIT_MS)
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn()
    } catch (err) {
      if (!isDatabaseAway(err) || Date.now() >= deadline) throw err
      opts.logger?.warn({ err: { name: (err as Error).name, message: (err as Error).message }, attempt }, `${opts.what}: the database is away; trying again`)
      await new Promise((r) => setTimeout(r, Math.min(2000, 250 * attempt)))
    }
  }
}

/**
 * A domain's own database connection and its models (each subgraph owns its collections), made again while the
 * database is away (whileDatabaseAway).
 */
export async function connectDomain<M>(
  mongoUrl: string,
  createModels: (conn: Connection) => Promise<M>,
  opts: { monitorCommands?: boolean; logger?: Pick<Logger, 'warn'>; waitMs?: number } = {},
): Promise<{ conn: Connection; models: M; clientOptions: ConnectOptions }> {
  const clientOptions: ConnectOptions = { serverSelectionTimeoutMS: 10000, monitorCommands: opts.monitorCommands ?? false }
  const connect = async () => {
    const conn = mongoose.createConnection(mongoUrl, clientOptions)
    try {
      await conn.asPromise()
      return { conn, models: await createModels(conn), clientOptions }
    } catch (err) {
      await conn.close().catch(() => undefined)
      throw err
    }
  }
  return whileDatabaseAway(connect, { what: 'connecting to the database', logger: opts.logger, waitMs: opts.waitMs })
}

/**
 * For one-off programs (operator commands): a domain's models for the length of `fn`, then the connection closes. One
 * try to connect (10 s to find the server): an operator is told the database is away rather than kept waiting.
 */
export async function withDomain<M, T>(mongoUrl: string, createModels: (conn: Connection) => Promise<M>, fn: (models: M) => Promise<T>): Promise<T> {
  const { conn, models } = await connectDomain(mongoUrl, createModels, { waitMs: 0 })
  try {
    return await fn(models)
  } finally {
    await conn.close()
  }
}

/** What every domain subgraph process is started with; each service's options add its domain's settings. */
export interface DomainProcessOptions {
  mongoUrl: string
  callerKeys: CallerKeys
  host: string
  port: number
  logger: Logger
  /** METRICS_TOKEN: what the subgraph's `/metrics` asks for */
  metricsToken?: string
  /** DB_COMMAND_METRICS: each database command's duration on `/metrics` */
  databaseCommandMetrics?: boolean
}

/** The process's own options out of a service's options (which carry its domain's settings too). */
export const processOptionsOf = (o: DomainProcessOptions): DomainProcessOptions => ({
  mongoUrl: o.mongoUrl,
  callerKeys: o.callerKeys,
  host: o.host,
  port: o.port,
  logger: o.logger,
  metricsToken: o.metricsToken,
  databaseCommandMetrics: o.databaseCommandMetrics,
})

export interface DomainSubgraphOptions<M, TContext extends SubgraphContext> extends Omit<SubgraphOptions<TContext>, 'extendContext'>, DomainProcessOptions {
  createModels: (conn: Connection) => Promise<M>
  /** the per-request context: principal, request id and logger, plus the domain's models and settings */
  extendContext: (base: SubgraphContext, models: M) => TContext
}

/**
 * A domain subgraph: its connection and models, its GraphQL server. stopServing() closes the server once its requests
 * have finished, so a service stops its relay and sweeps after it (an event a draining request writes still leaves);
 * stop() closes both.
 */
export async function startDomainSubgraph<M, TContext extends SubgraphContext>(
  opts: DomainSubgraphOptions<M, TContext>,
): Promise<RunningSubgraph & { models: M; metrics: ProcessMetrics; stopServing(): Promise<void> }> {
  const databaseCommandMetrics = opts.databaseCommandMetrics ?? false
  const { conn, models, clientOptions } = await connectDomain(opts.mongoUrl, opts.createModels, { monitorCommands: databaseCommandMetrics, logger: opts.logger })
  const metrics = createMetrics(`subgraph-${opts.name}`)
  const observe = () => databaseCommandMetrics && observeDatabaseCommands(metrics, conn.getClient())
  observe()
  const watch = watchDatabase(conn, opts.mongoUrl, { clientOptions, onReopen: observe, logger: opts.logger })
  const running = await startSubgraph<TContext>({
    ...opts,
    extendContext: (base) => opts.extendContext(base, models),
    metrics,
    readiness: { database: () => conn.db!.admin().ping() },
  })
  let serving: Promise<void> | undefined
  const stopServing = () => (serving ??= running.stop())
  return {
    url: running.url,
    models,
    /** the process's `/metrics` registry: what runs beside the server (its outbox relay) adds its series */
    metrics,
    stopServing,
    async stop() {
      await stopServing()
      watch.stop()
      await conn.close()
    },
  }
}


export { pino }
export type { Logger }

export { isDuplicateKeyError } from './duplicate-key'

export { isDatabaseAway, isDatabaseUnreachable } from './database-errors'
export { UsageError, parseOperatorArgs, requiredOption, runOperatorCommand } from './operator-command'
export { watchDatabase, type DatabaseWatchOptions } from './database-watch'
export { finishEach, startPrune, startSweep, type Sweep } from './sweep'
export { deleteByIds, findEach } from './by-key'
export { sharedRun } from './shared-runs'
export { createTurnModel, inTurn, type Turn, type TurnModel, type TurnOptions } from './turns'
