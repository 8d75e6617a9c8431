/** The apps subgraph: its database connection, models and GraphQL server. */
import mongoose from 'mongoose'
import type { Logger } from 'pino'
import { startSubgraph, type RunningSubgraph } from '@svc/subgraph-server'
import { createAppsModels, type AppsModels } from './models'
import { resolvers, type AppsContext } from './resolvers'
import { typeDefs } from './schema'

export interface AppsServiceOptions {
  mongoUrl: string
  contextSecret: string
  host: string
  port: number
  logger: Logger
  allowLoopbackWebhooksInTest: boolean
}

export async function connectApps(mongoUrl: string): Promise<{ conn: mongoose.Connection; models: AppsModels }> {
  const conn = await mongoose.createConnection(mongoUrl, { serverSelectionTimeoutMS: 10000 }).asPromise()
  return { conn, models: await createAppsModels(conn) }
}

export async function startAppsService(opts: AppsServiceOptions): Promise<RunningSubgraph & { models: AppsModels }> {
  const { conn, models } = await connectApps(opts.mongoUrl)
  const policy = { allowLoopbackWebhooksInTest: opts.allowLoopbackWebhooksInTest }
  const running = await startSubgraph<AppsContext>({
    name: 'apps',
    typeDefs,
    resolvers,
    contextSecret: opts.contextSecret,
    logger: opts.logger,
    host: opts.host,
    port: opts.port,
    extendContext: (base) => ({ ...base, models, policy }),
  })
  return {
    url: running.url,
    models,
    async stop() {
      await running.stop()
      await conn.close()
    },
  }
}
