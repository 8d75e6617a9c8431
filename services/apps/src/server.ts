/** The apps subgraph: its database connection, models and GraphQL server. */
import type { Logger } from 'pino'
import { connectDomain, startDomainSubgraph } from '@svc/subgraph-server'
import { createAppsModels } from './models'
import { resolvers, type AppsContext } from './resolvers'
import { typeDefs } from './schema'

export interface AppsServiceOptions {
  mongoUrl: string
  contextSecret: string
  host: string
  port: number
  logger: Logger
  allowLoopbackWebhooksInTest: boolean
  /** base URL of the creator dashboard (config.dashboardUrl); approval requests link to its pages */
  dashboardUrl: string
}

export const connectApps = (mongoUrl: string) => connectDomain(mongoUrl, createAppsModels)

export function startAppsService(opts: AppsServiceOptions) {
  const policy = { allowLoopbackWebhooksInTest: opts.allowLoopbackWebhooksInTest }
  return startDomainSubgraph({
    ...opts,
    name: 'apps',
    typeDefs,
    resolvers,
    createModels: createAppsModels,
    extendContext: (base, models): AppsContext => ({ ...base, models, policy, dashboardUrl: opts.dashboardUrl, memo: new Map() }),
  })
}
