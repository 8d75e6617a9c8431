/** The payments subgraph's process: the subgraph, its checkout sweep and its outbox relay. */
import { outboxRelaySettings, runProcess } from '@svc/config'
import { startPaymentsService } from './server'

runProcess('payments', async (config, logger) => {
  const service = await startPaymentsService({
    mongoUrl: config.mongoUrl,
    callerKeys: config.secrets.callerKeys,
    gatewayUrl: config.gatewayUrl,
    host: config.host,
    port: config.ports.paymentsSubgraph,
    logger,
    metricsToken: config.secrets.metricsToken,
    databaseCommandMetrics: config.databaseCommandMetrics,
    serviceDid: config.serviceDid,
    checkoutUrl: config.checkoutUrl,
    tokenSecret: config.secrets.paymentTokens,
    previousTokenSecret: config.secrets.previousPaymentTokens,
    checkoutExpirySeconds: config.checkoutExpirySeconds,
    liveProcessor: config.liveProcessor,
    testProcessorLatencyMs: config.testProcessorLatencyMs,
    relay: outboxRelaySettings(config),
  })
  return service.stop
})
