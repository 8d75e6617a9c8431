/** The actors subgraph: its database connection, models and GraphQL server. */
import mongoose from 'mongoose'
import type { Logger } from 'pino'
import { startSubgraph, type RunningSubgraph } from '@svc/subgraph-server'
import { createActorsModels, type ActorsModels } from './models'
import { resolvers, type ActorsContext } from './resolvers'
import { typeDefs } from './schema'

export interface ActorsServiceOptions {
  mongoUrl: string
  contextSecret: string
  host: string
  port: number
  logger: Logger
}

export async function connectActors(mongoUrl: string): Promise<{ conn: mongoose.Connection; models: ActorsModels }> {
  const conn = await mongoose.createConnection(mongoUrl, { serverSelectionTimeoutMS: 10000 }).asPromise()
  return { conn, models: await createActorsModels(conn) }
}

export async function startActorsService(opts: ActorsServiceOptions): Promise<RunningSubgraph & { models: ActorsModels }> {
  const { conn, models } = await connectActors(opts.mongoUrl)
  const running = await startSubgraph<ActorsContext>({
    name: 'actors',
    typeDefs,
    resolvers,
    contextSecret: opts.contextSecret,
    logger: opts.logger,
    host: opts.host,
    port: opts.port,
    extendContext: (base) => ({ ...base, models }),
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
