/** The actors subgraph: its database connection, models and GraphQL server. */
import { connectDomain, processOptionsOf, startDomainSubgraph, type DomainProcessOptions } from '@svc/subgraph-server'
import { createActorsModels } from './models'
import { resolvers, type ActorsContext } from './resolvers'
import { typeDefs } from './schema'

export type ActorsServiceOptions = DomainProcessOptions

export const connectActors = (mongoUrl: string) => connectDomain(mongoUrl, createActorsModels)

export function startActorsService(opts: ActorsServiceOptions) {
  return startDomainSubgraph({
    ...processOptionsOf(opts),
    name: 'actors',
    typeDefs,
    resolvers,
    createModels: createActorsModels,
    extendContext: (base, models): ActorsContext => ({ ...base, domain: { models, logger: base.log } }),
  })
}
