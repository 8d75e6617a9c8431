/** The apps subgraph: its database connection, models, GraphQL server and the relay of its outbox. */
import { createGatewayClient } from '@svc/gateway-client'
import { startOutboxRelay, type OutboxRelaySettings } from '@svc/outbox'
import { connectDomain, processOptionsOf, startDomainSubgraph, startPrune, startSweep, type DomainProcessOptions } from '@svc/subgraph-server'
import type { ActorFacts } from './domain/actor-facts'
import type { AppsDomain } from './domain/context'
import { writeDueApprovalEvents } from './domain/recipient-approvals'
import { pruneRequestLog } from './domain/request-log'
import type { SigningSecrets } from './domain/signing-secrets'
import { createGraphFacts, createGraphSigningSecrets } from './graph-facts'
import { createAppsModels, type AppsModels } from './models'
import { resolvers, type AppsContext } from './resolvers'
import { typeDefs } from './schema'

export interface AppsServiceOptions extends DomainProcessOptions {
  /** the gateway, through which this domain reads the actors facts it decides on and asks events for signing secrets (as the service apps) */
  gatewayUrl: string
  allowLoopbackWebhooksInTest: boolean
  /** base URL of the creator dashboard (config.dashboardUrl); approval requests link to its pages */
  dashboardUrl: string
  /** relays the apps outbox to the `domain-events` queue (docs/events.md); without it nothing leaves the outbox */
  relay?: OutboxRelaySettings
}

/** How often the apps process deletes request log entries past their retention. */
const REQUEST_LOG_PRUNE_MS = 60 * 60 * 1000
const DUE_APPROVAL_EVENTS_SWEEP_MS = 60 * 1000

export const connectApps = (mongoUrl: string) => connectDomain(mongoUrl, createAppsModels)

export async function startAppsService(opts: AppsServiceOptions): Promise<{ url: string; models: AppsModels; stop(): Promise<void> }> {
  const settings: Omit<AppsDomain, 'models'> = {
    policy: { allowLoopbackWebhooksInTest: opts.allowLoopbackWebhooksInTest },
    dashboardUrl: opts.dashboardUrl,
    logger: opts.logger,
  }
  const gateway = createGatewayClient({ url: opts.gatewayUrl, signer: { issuer: 'apps', key: opts.callerKeys.apps }, connections: 16, timeoutMs: 10_000, logger: opts.logger })
  const running = await startDomainSubgraph({
    ...processOptionsOf(opts),
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
        requestId: base.requestId,
        get facts() { return (facts ??= createGraphFacts(gateway, base.requestId)) },
        get signingSecrets() { return (signingSecrets ??= createGraphSigningSecrets(gateway, base.requestId)) },
      }
      return { ...base, domain, memo: new Map() }
    },
  })
  const relay = opts.relay ? startOutboxRelay({ ...opts.relay, model: running.models.Outbox, source: 'apps', logger: opts.logger, metrics: running.metrics }) : null
  const prune = startPrune(
    'request log prune',
    () => pruneRequestLog({ models: running.models }),
    REQUEST_LOG_PRUNE_MS,
    opts.logger,
    'request log: deleted entries older than the retention',
  )
  // an approval's move cut off before its event was written, that no read finished since
  const dueEvents = startSweep(
    'approval events sweep',
    async () => {
      const finished = await writeDueApprovalEvents({ models: running.models, logger: opts.logger })
      if (finished > 0) opts.logger.info({ finished }, 'approvals: events of moves cut off are written')
    },
    DUE_APPROVAL_EVENTS_SWEEP_MS,
    opts.logger,
  )
  return {
    url: running.url,
    models: running.models,
    async stop() {
      // requests first: one finishing during the drain may write an event, which the relay then publishes
      await running.stopServing()
      await prune.stop()
      await dueEvents.stop()
      await relay?.stop()
      await running.stop()
      await gateway.close()
    },
  }
}
