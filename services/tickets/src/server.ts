/**
 * The tickets subgraph: its models and GraphQL server, its gateway client for the apps facts it decides on and the
 * checkouts it starts, the relay of its outbox, the hold expiry queue, the seat map and the sweep.
 */
import { createGatewayClient } from '@svc/gateway-client'
import { startOutboxRelay, type OutboxRelaySettings } from '@svc/outbox'
import { processOptionsOf, startDomainSubgraph, type DomainProcessOptions } from '@svc/subgraph-server'
import type { AppFacts } from './domain/app-facts'
import { createGraphCheckouts, createGraphFacts } from './graph-facts'
import { createTicketsModels, type TicketsModels } from './models'
import { resolvers, type TicketsContext } from './resolvers'
import { typeDefs } from './schema'
import { DEFAULT_TICKETS_SWEEP_MS, startTicketsSweeper } from './sweeper'
import type { HoldExpiryScheduler } from './domain/context'
import { startHoldExpiry, type HoldExpiryQueue } from './hold-expiry'
import { createRedisSeatMap } from './redis-seat-map'

export interface TicketsServiceOptions extends DomainProcessOptions {
  /** the gateway, through which this domain reads the app's environment and modules and starts a hold's checkout (as the service tickets) */
  gatewayUrl: string
  /** the checkout host ({checkout_url}), where a ticket's page is */
  checkoutUrl: string
  /**
   * relays the tickets outbox to the `domain-events` queue (docs/events.md) and runs the `ticket-holds` queue (hold
   * expiries on time); without it nothing leaves the outbox and holds lapse on read only
   */
  relay?: OutboxRelaySettings
  /** the sweep announcing tickets whose claim stopped before its event; default 60000; 0 disables */
  sweepIntervalMs?: number
}

export async function startTicketsService(opts: TicketsServiceOptions): Promise<{ url: string; models: TicketsModels; stop(): Promise<void> }> {
  const gateway = createGatewayClient({ url: opts.gatewayUrl, signer: { issuer: 'tickets', key: opts.callerKeys.tickets }, connections: 32, timeoutMs: 10_000, logger: opts.logger })
  // the worker works on the same models as the subgraph: made once they exist (below), used by the requests after
  let expiryQueue: HoldExpiryQueue | null = null
  // the seat map lives in the Redis the relay uses; without one, seats are counted from the units
  const seatMap = opts.relay ? createRedisSeatMap({ redisUrl: opts.relay.redisUrl, redisPrefix: opts.relay.redisPrefix, logger: opts.logger }) : undefined
  const holdExpiry: HoldExpiryScheduler = { schedule: (holdId, expiresAt) => expiryQueue?.schedule(holdId, expiresAt) ?? Promise.resolve() }
  const running = await startDomainSubgraph({
    ...processOptionsOf(opts),
    name: 'tickets',
    typeDefs,
    resolvers,
    createModels: createTicketsModels,
    extendContext: (base, models): TicketsContext => {
      let facts: AppFacts | undefined
      // made on first use, like the payments subgraph's
      const domain = {
        models,
        logger: base.log,
        requestId: base.requestId,
        seatMap,
        checkoutUrl: opts.checkoutUrl.replace(/\/+$/, ''),
        holdExpiry,
        get facts() {
          return (facts ??= createGraphFacts(gateway, base.requestId))
        },
        checkouts: createGraphCheckouts(gateway, base.requestId),
      }
      return { ...base, domain }
    },
  })
  const sweeper = startTicketsSweeper({ models: running.models, logger: opts.logger, seatMap }, opts.sweepIntervalMs ?? DEFAULT_TICKETS_SWEEP_MS, opts.logger)
  const relay = opts.relay ? startOutboxRelay({ ...opts.relay, model: running.models.Outbox, source: 'tickets', logger: opts.logger, metrics: running.metrics }) : null
  if (opts.relay) expiryQueue = startHoldExpiry({ domain: { models: running.models, logger: opts.logger, seatMap }, redisUrl: opts.relay.redisUrl, redisPrefix: opts.relay.redisPrefix, logger: opts.logger })
  return {
    url: running.url,
    models: running.models,
    async stop() {
      // requests first: one finishing during the drain may write an event, which the relay then publishes
      await running.stopServing()
      await sweeper.stop()
      await relay?.stop()
      await expiryQueue?.stop()
      await running.stop()
      await seatMap?.close()
      await gateway.close()
    },
  }
}
