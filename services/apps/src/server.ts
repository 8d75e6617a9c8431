/** The apps subgraph: its database connection, models, GraphQL server and the relay of its outbox. */
import type { Logger } from 'pino'
import { createGatewayClient } from '@svc/gateway-client'
import type { CallerKeys } from '@svc/internal-context'
import { startOutboxRelay, type OutboxRelaySettings } from '@svc/outbox'
import { connectDomain, startDomainSubgraph } from '@svc/subgraph-server'
import type { ActorFacts } from './domain/actor-facts'
import type { AppsDomain } from './domain/context'
import type { SigningSecrets } from './domain/signing-secrets'
import { createGraphFacts, createGraphSigningSecrets } from './graph-facts'
import { createAppsModels, type AppsModels } from './models'
import { resolvers, type AppsContext } from './resolvers'
import { typeDefs } from './schema'

export interface AppsServiceOptions {
  mongoUrl: string
  callerKeys: CallerKeys
  /** the gateway, through which this domain reads the actors facts it decides on and asks events for signing secrets (as the service apps) */
  gatewayUrl: string
  host: string
  port: number
  logger: Logger
  /** OPERATOR_TOKEN: what the subgraph's `/metrics` asks for */
  operatorToken?: string
  /** DB_COMMAND_METRICS */
  databaseCommandMetrics?: boolean
  allowLoopbackWebhooksInTest: boolean
  /** base URL of the creator dashboard (config.dashboardUrl); approval requests link to its pages */
  dashboardUrl: string
  /** relays the apps outbox to the `domain-events` queue (docs/events.md); without it nothing leaves the outbox */
  relay?: OutboxRelaySettings
}

export const connectApps = (mongoUrl: string) => connectDomain(mongoUrl, createAppsModels)

export async function startAppsService(opts: AppsServiceOptions): Promise<{ url: string; models: AppsModels; stop(): Promise<void> }> {
  const settings: Omit<AppsDomain, 'models'> = {
    policy: { allowLoopbackWebhooksInTest: opts.allowLoopbackWebhooksInTest },
    dashboardUrl: opts.dashboardUrl,
    logger: opts.logger,
  }
  const gateway = createGatewayClient({ url: opts.gatewayUrl, signer: { issuer: 'apps', key: opts.callerKeys.apps }, connections: 16, timeoutMs: 10_000 })
  const running = await startDomainSubgraph({
    mongoUrl: opts.mongoUrl,
    callerKeys: opts.callerKeys,
    host: opts.host,
    port: opts.port,
    logger: opts.logger,
    operatorToken: opts.operatorToken,
    databaseCommandMetrics: opts.databaseCommandMetrics,
    name: 'apps',
    typeDefs,
    resolvers,
    createModels: createAppsModels,
    extendContext: (base, models): AppsContext => {
      let facts: ActorFacts | undefined
      let signingSecrets: SigningSecrets | undefined
      // made on first use: only the use cases that reach other domains need them
      const domain = {
        ...settings,
        models,
        logger: base.log,
        get facts() { return (facts ??= createGraphFacts(gateway, base.requestId)) },
        get signingSecrets() { return (signingSecrets ??= createGraphSigningSecrets(gateway, base.requestId)) },
      }
      return { ...base, domain, memo: new Map() }
    },
  })
  const relay = opts.relay ? startOutboxRelay({ ...opts.relay, model: running.models.Outbox, source: 'apps', logger: opts.logger }) : null
  return {
    url: running.url,
    models: running.models,
    async stop() {
      await relay?.stop()
      await running.stop()
      await gateway.close()
    },
  }
}
