/**
 * The real apps subgraph on its own test database, behind the real gateway, on loopback ports; with the actors
 * subgraph beside it, because the apps schema references the actors' ActorProfile entity (a federated schema that
 * extends a type needs the subgraph that owns it).
 */
import { randomBytes } from 'node:crypto'
import pino from 'pino'
import type { FastifyInstance } from 'fastify'
import { startActorsService, type ActorsModels } from '@svc/actors'
import { startAppsService, type AppsModels } from '@svc/apps'
import type { RunningSubgraph } from '@svc/subgraph-server'
import { isolate, reservePort, testCallerKeys } from '@svc/testing'
import { buildGateway } from '@svc/gateway'

export const testLogger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })

export function newSecrets() {
  return { callerKeys: testCallerKeys(), operatorToken: randomBytes(32).toString('hex'), metricsToken: randomBytes(32).toString('hex') }
}

export interface GraphQLBody {
  data?: unknown
  errors?: { message: string; path?: unknown[]; extensions?: Record<string, unknown> }[]
  error?: string
  message?: string
}

export interface GatewayFixture {
  baseUrl: string
  graphqlUrl: string
  secrets: ReturnType<typeof newSecrets>
  apps: RunningSubgraph & { models: AppsModels }
  actors: RunningSubgraph & { models: ActorsModels }
  gateway: FastifyInstance
  stop(): Promise<void>
}

export async function startGatewayWithApps(label: string, extra: { name: string; url: string }[] = []): Promise<GatewayFixture> {
  const iso = isolate(label)
  const secrets = newSecrets()
  // the gateway's port first: the apps subgraph reads the actors domain through it
  // held until the gateway listens, so no subgraph started meanwhile on port 0 is given it
  const gatewayHost = await reservePort()
  const gatewayPort = gatewayHost.port
  const apps = await startAppsService({
    mongoUrl: iso.mongoUrl,
    callerKeys: secrets.callerKeys,
    gatewayUrl: `http://127.0.0.1:${gatewayPort}/graphql`,
    host: '127.0.0.1',
    port: 0,
    logger: testLogger,
    allowLoopbackWebhooksInTest: false,
    dashboardUrl: 'http://127.0.0.1:1/dashboard',
  })
  const actors = await startActorsService({ mongoUrl: iso.mongoUrl, callerKeys: secrets.callerKeys, host: '127.0.0.1', port: 0, logger: testLogger })
  const gateway = await buildGateway({
    services: [{ name: 'apps', url: apps.url }, { name: 'actors', url: actors.url }, ...extra],
    secrets,
    graphiql: false,
    logger: testLogger,
    retryServicesCount: 1,
  })
  await gatewayHost.release()
  await gateway.listen({ host: '127.0.0.1', port: gatewayPort })
  const baseUrl = `http://127.0.0.1:${gatewayPort}`
  return {
    baseUrl,
    graphqlUrl: `${baseUrl}/graphql`,
    secrets,
    apps,
    actors,
    gateway,
    async stop() {
      await gateway.close()
      await apps.models.App.db.dropDatabase().catch(() => undefined)
      await apps.stop()
      await actors.stop()
    },
  }
}

export async function postGraphQL(
  url: string,
  query: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: GraphQLBody }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query }),
  })
  return { status: res.status, body: (await res.json()) as GraphQLBody }
}
