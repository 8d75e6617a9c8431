/** The actors subgraph: its database connection, models and GraphQL server. */
import type { Logger } from 'pino'
import type { CallerKeys } from '@svc/internal-context'
import { connectDomain, startDomainSubgraph } from '@svc/subgraph-server'
import { createActorsModels } from './models'
import { resolvers, type ActorsContext } from './resolvers'
import { typeDefs } from './schema'

export interface ActorsServiceOptions {
  mongoUrl: string
  callerKeys: CallerKeys
  host: string
  port: number
  logger: Logger
  /** OPERATOR_TOKEN: what the subgraph's `/metrics` asks for */
  operatorToken?: string
  /** DB_COMMAND_METRICS */
  databaseCommandMetrics?: boolean
}

export const connectActors = (mongoUrl: string) => connectDomain(mongoUrl, createActorsModels)

export function startActorsService(opts: ActorsServiceOptions) {
  return startDomainSubgraph({
    ...opts,
    name: 'actors',
    typeDefs,
    resolvers,
    createModels: createActorsModels,
    extendContext: (base, models): ActorsContext => ({ ...base, domain: { models, logger: base.log } }),
  })
}
