/**
 * The whole service in one test process, on loopback ports: the apps and actors subgraphs on the test
 * FerretDB (one database of the stack's own), the mercurius gateway composing both, and the XRPC adapter's two hosts, with Redis under the test
 * file's own key prefix. Real HTTP between every piece.
 */
import Redis from 'ioredis'
import pino from 'pino'
import { randomBytes } from 'node:crypto'
import { connectActors, startActorsService, upsertActor, type ActorsModels, type ActorView, type PayoutStatus } from '@svc/actors'
import { connectApps, registerApp, issueApiKey, startAppsService, type AppsModels } from '@svc/apps'
import { buildGateway } from '@svc/gateway'
import { buildApiServer, buildCheckoutServer, createGatewayClient } from '@svc/xrpc-adapter'
import { createServiceAuthVerifier, generateDidKeyKeypair, mintServiceJwt, type ServiceJwtAlg } from '@svc/service-auth'
import { isolate } from './isolation'

export interface TestStack {
  /** the stack's own database on the test FerretDB */
  mongoUrl: string
  apiUrl: string
  checkoutUrl: string
  gatewayUrl: string
  appsSubgraphUrl: string
  actorsSubgraphUrl: string
  serviceDid: string
  secrets: { internalContext: string; adapterGatewayToken: string; operatorToken: string }
  models: AppsModels
  /** the actors subgraph's models, on the same database */
  actors: ActorsModels
  redis: Redis
  /** registers a fresh did:key app for an environment and returns what a developer would hold */
  newApp(opts?: { environments?: ('test' | 'live')[]; alg?: ServiceJwtAlg; appUrl?: string }): Promise<TestApp>
  /** creates an actor (a fresh did:plc-style DID unless given) in one environment; a creator, payout status onboarding-required unless given */
  newActor(opts: NewActorOptions): Promise<ActorView>
  stop(): Promise<void>
}

export interface NewActorOptions {
  did?: string
  environment: 'test' | 'live'
  payoutStatus?: PayoutStatus
  displayName?: string | null
  kind?: 'creator' | 'project'
  paymentTypes?: string[]
}

export interface TestApp {
  did: string
  jwt(lxm: string, opts?: { aud?: string; expiresInSeconds?: number }): Promise<string>
  apiKey(environment: 'test' | 'live', permissions?: string[]): Promise<string>
}

export async function startStack(
  label: string,
  opts: { allowLoopbackWebhooks?: boolean; methods?: Parameters<typeof buildApiServer>[0]['methods'] } = {},
): Promise<TestStack> {
  const iso = isolate(label)
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' })
  const secrets = {
    internalContext: randomBytes(32).toString('hex'),
    adapterGatewayToken: randomBytes(32).toString('hex'),
    operatorToken: randomBytes(32).toString('hex'),
  }
  const serviceDid = 'did:web:svc.test'
  const apps = await startAppsService({
    mongoUrl: iso.mongoUrl,
    contextSecret: secrets.internalContext,
    host: '127.0.0.1',
    port: 0,
    logger,
    allowLoopbackWebhooksInTest: opts.allowLoopbackWebhooks ?? false,
  })
  const actors = await startActorsService({ mongoUrl: iso.mongoUrl, contextSecret: secrets.internalContext, host: '127.0.0.1', port: 0, logger })
  const gateway = await buildGateway({
    services: [
      { name: 'apps', url: apps.url },
      { name: 'actors', url: actors.url },
    ],
    secrets,
    graphiql: false,
    logger,
  })
  await gateway.listen({ host: '127.0.0.1', port: 0 })
  const gatewayUrl = `http://127.0.0.1:${(gateway.server.address() as { port: number }).port}/graphql`
  const redis = new Redis(iso.redisUrl, { lazyConnect: false })
  const gatewayClient = createGatewayClient({ url: gatewayUrl, token: secrets.adapterGatewayToken })
  const serviceAuth = createServiceAuthVerifier({ serviceDid, plcUrl: 'http://127.0.0.1:1', redis, replayKeyPrefix: `${iso.redisPrefix}jti:` })
  const api = await buildApiServer({ logger, gateway: gatewayClient, serviceAuth, methods: opts.methods })
  const checkout = await buildCheckoutServer({ logger, gateway: gatewayClient, serviceAuth })
  await api.listen({ host: '127.0.0.1', port: 0 })
  await checkout.listen({ host: '127.0.0.1', port: 0 })
  const portOf = (s: typeof api) => (s.server.address() as { port: number }).port
  const { conn, models } = await connectApps(iso.mongoUrl)
  const actorsDb = await connectActors(iso.mongoUrl)

  return {
    mongoUrl: iso.mongoUrl,
    apiUrl: `http://127.0.0.1:${portOf(api)}`,
    checkoutUrl: `http://127.0.0.1:${portOf(checkout)}`,
    gatewayUrl,
    appsSubgraphUrl: apps.url,
    actorsSubgraphUrl: actors.url,
    serviceDid,
    secrets,
    models,
    actors: actorsDb.models,
    redis,
    async newApp(o = {}) {
      const { did, keypair } = await generateDidKeyKeypair(o.alg ?? 'ES256K')
      for (const environment of o.environments ?? ['test']) {
        await registerApp(models, { did, environment, appUrl: o.appUrl ?? 'https://app.example.com', feeShareBps: 500, ticketFee: { bps: 250, flatAmount: 30, flatCurrency: 'usd' } })
      }
      return {
        did,
        jwt: (lxm, j = {}) => mintServiceJwt({ keypair, iss: did, aud: j.aud ?? serviceDid, lxm, expiresInSeconds: j.expiresInSeconds }),
        apiKey: async (environment, permissions = ['app.config.read']) => (await issueApiKey(models, { appDid: did, environment, permissions })).key,
      }
    },
    newActor: (o) =>
      upsertActor(actorsDb.models, {
        did: o.did ?? `did:plc:${randomBytes(12).toString('hex')}`,
        environment: o.environment,
        kind: o.kind,
        displayName: o.displayName,
        paymentTypes: o.paymentTypes,
        payoutStatus: o.payoutStatus,
      }),
    async stop() {
      await Promise.allSettled([api.close(), checkout.close()])
      await gatewayClient.close()
      await gateway.close()
      await apps.stop()
      await actors.stop()
      await actorsDb.conn.close()
      await conn.dropDatabase().catch(() => undefined)
      await conn.close()
      const keys = await redis.keys(`${iso.redisPrefix}*`)
      if (keys.length) await redis.del(...keys)
      redis.disconnect()
    },
  }
}
