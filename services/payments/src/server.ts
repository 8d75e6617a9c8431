/** The payments subgraph: its models, processors, GraphQL server, the checkout sweeper and the relay of its outbox. */
import { createGatewayClient } from '@svc/gateway-client'
import { startOutboxRelay, type OutboxRelaySettings } from '@svc/outbox'
import { processOptionsOf, startDomainSubgraph, type DomainProcessOptions } from '@svc/subgraph-server'
import type { AppFacts } from './domain/app-facts'
import type { PaymentsDomain, TicketHolds } from './domain/context'
import { createGraphFacts } from './graph-facts'
import { createGraphHolds } from './graph-holds'
import { createPaymentsModels, type PaymentsModels } from './models'
import { createProcessorRegistry, type LiveProcessorSetting, type ProcessorRegistry } from './processors'
import { resolvers, type PaymentsContext } from './resolvers'
import { typeDefs } from './schema'
import { DEFAULT_SWEEP_INTERVAL_MS, startCheckoutSweeper } from './sweeper'

export interface PaymentsServiceOptions extends DomainProcessOptions {
  /** the gateway, through which this domain reads the apps and actors facts it decides on and a ticket checkout's hold (as the service payments) */
  gatewayUrl: string
  /** payment record AT-URIs: at://<serviceDid>/money.svc.payment.record/<tid> */
  serviceDid: string
  /** browser URL = `${checkoutUrl}/checkout/${browserToken}` */
  checkoutUrl: string
  /** HMAC secret deriving the status and browser tokens */
  tokenSecret: string
  /** the secret before the last rotation (PAYMENT_TOKEN_SECRET_PREVIOUS) */
  previousTokenSecret?: string | null
  /** an abandoned checkout expires as failed (expired) after this many seconds */
  checkoutExpirySeconds: number
  /** live initiate → ProcessorNotConfigured */
  liveProcessor: LiveProcessorSetting
  /** the test processor's wait before it charges (TEST_PROCESSOR_LATENCY_MS); default 0 */
  testProcessorLatencyMs?: number
  /** periodic expiry sweep and settlement recovery; default 60000; 0 disables */
  sweepIntervalMs?: number
  /** relays the payments outbox to the `domain-events` queue (docs/events.md); without it nothing leaves the outbox */
  relay?: OutboxRelaySettings
}

export async function startPaymentsService(opts: PaymentsServiceOptions): Promise<{ url: string; models: PaymentsModels; stop(): Promise<void> }> {
  if (typeof opts.tokenSecret !== 'string' || opts.tokenSecret.length < 32) throw new Error('payments: tokenSecret must be at least 32 characters')
  if (!Number.isInteger(opts.checkoutExpirySeconds) || opts.checkoutExpirySeconds < 1) throw new Error('payments: checkoutExpirySeconds must be a positive integer')
  const gateway = createGatewayClient({ url: opts.gatewayUrl, signer: { issuer: 'payments', key: opts.callerKeys.payments }, connections: 32, timeoutMs: 10_000, logger: opts.logger })
  const settings: Omit<PaymentsDomain, 'models' | 'processors'> = {
    serviceDid: opts.serviceDid,
    checkoutUrl: opts.checkoutUrl.replace(/\/+$/, ''),
    tokenSecret: opts.tokenSecret,
    previousTokenSecret: opts.previousTokenSecret ?? null,
    checkoutExpirySeconds: opts.checkoutExpirySeconds,
    logger: opts.logger,
    holds: createGraphHolds(gateway),
  }
  // made with the models, once: the test processor keeps its ledger in the payments database
  let processors: ProcessorRegistry | undefined
  const processorsOf = (models: PaymentsModels) => (processors ??= createProcessorRegistry({ liveProcessor: opts.liveProcessor, testProcessorLatencyMs: opts.testProcessorLatencyMs }, models))
  const running = await startDomainSubgraph({
    ...processOptionsOf(opts),
    name: 'payments',
    typeDefs,
    resolvers,
    createModels: createPaymentsModels,
    extendContext: (base, models): PaymentsContext => {
      let facts: AppFacts | undefined
      // made on first use: only the use cases that call other domains need them
      let holds: TicketHolds | undefined
      const domain = {
        ...settings,
        models,
        processors: processorsOf(models),
        logger: base.log,
        requestId: base.requestId,
        get facts() {
          return (facts ??= createGraphFacts(gateway, base.requestId))
        },
        get holds() {
          return (holds ??= createGraphHolds(gateway, () => base.requestId))
        },
      }
      return { ...base, domain }
    },
  })

  const domain: PaymentsDomain = { ...settings, models: running.models, processors: processorsOf(running.models) }
  const sweeper = startCheckoutSweeper(domain, opts.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS, opts.logger)
  const relay = opts.relay ? startOutboxRelay({ ...opts.relay, model: running.models.Outbox, source: 'payments', logger: opts.logger, metrics: running.metrics }) : null

  return {
    url: running.url,
    models: running.models,
    async stop() {
      // requests first: one finishing during the drain may write an event, which the relay then publishes
      await running.stopServing()
      await sweeper.stop()
      await relay?.stop()
      await running.stop()
      await gateway.close()
    },
  }
}
