/** The tickets subgraph: its models and GraphQL server, and its gateway client for the apps facts it decides on. */
import type { Logger } from 'pino'
import { createGatewayClient } from '@svc/gateway-client'
import type { CallerKeys } from '@svc/internal-context'
import { startDomainSubgraph } from '@svc/subgraph-server'
import type { AppFacts } from './domain/app-facts'
import { createGraphFacts } from './graph-facts'
import { createTicketsModels, type TicketsModels } from './models'
import { resolvers, type TicketsContext } from './resolvers'
import { typeDefs } from './schema'

export interface TicketsServiceOptions {
  mongoUrl: string
  callerKeys: CallerKeys
  /** the gateway, through which this domain reads the app's environment and modules (as the service tickets) */
  gatewayUrl: string
  host: string
  port: number
  logger: Logger
  /** OPERATOR_TOKEN: what the subgraph's `/metrics` asks for */
  operatorToken?: string
  /** DB_COMMAND_METRICS */
  databaseCommandMetrics?: boolean
}

export async function startTicketsService(opts: TicketsServiceOptions): Promise<{ url: string; models: TicketsModels; stop(): Promise<void> }> {
  const gateway = createGatewayClient({ url: opts.gatewayUrl, signer: { issuer: 'tickets', key: opts.callerKeys.tickets }, connections: 32, timeoutMs: 10_000 })
  const running = await startDomainSubgraph({
    mongoUrl: opts.mongoUrl,
    callerKeys: opts.callerKeys,
    host: opts.host,
    port: opts.port,
    logger: opts.logger,
    operatorToken: opts.operatorToken,
    databaseCommandMetrics: opts.databaseCommandMetrics,
    name: 'tickets',
    typeDefs,
    resolvers,
    createModels: createTicketsModels,
    extendContext: (base, models): TicketsContext => {
      let facts: AppFacts | undefined
      // made on first use, like the payments subgraph's
      const domain = { models, logger: base.log, get facts() { return (facts ??= createGraphFacts(gateway, base.requestId)) } }
      return { ...base, domain }
    },
  })
  return {
    url: running.url,
    models: running.models,
    async stop() {
      await running.stop()
      await gateway.close()
    },
  }
}
