/** The events subgraph: its database connection, models, the delivery queue it adds to, and its GraphQL server. */
import Redis from 'ioredis'
import { producerQueue } from '@svc/outbox'
import { logConnectionErrors, REQUEST_REDIS_OPTIONS } from '@svc/operations'
import { processOptionsOf, startDomainSubgraph, startPrune, type DomainProcessOptions } from '@svc/subgraph-server'
import type { EventsDomain } from './domain/context'
import { pruneTestDeliveries } from './domain/retention'
import { createEventsModels, type EventsModels } from './models'
import { queuePrefix, WEBHOOK_DELIVERIES_QUEUE, type DeliveryJob } from './queues'
import { resolvers, type EventsContext } from './resolvers'
import { typeDefs } from './schema'

export interface EventsServiceOptions extends DomainProcessOptions {
  redisUrl: string
  redisPrefix: string
  /** WEBHOOK_SECRET_KEY */
  secretKey: string
  /** WEBHOOK_SECRET_KEY_PREVIOUS, during that key's rotation: signing secrets still stored under it are read */
  previousSecretKey?: string | null
}

/** How often the events process deletes test deliveries past their retention. */
const TEST_DELIVERY_PRUNE_MS = 60 * 60 * 1000

export async function startEventsService(opts: EventsServiceOptions): Promise<{ url: string; models: EventsModels; stop(): Promise<void> }> {
  if (typeof opts.secretKey !== 'string' || opts.secretKey.length < 32) throw new Error('events: secretKey must be at least 32 characters')
  // a command fails at the first reconnect that does: while Redis is away a request answers ServiceUnavailable at
  // once, rather than waiting for Redis past the gateway's timeout and then running (a test event the app was told failed)
  const redis = new Redis(opts.redisUrl, { maxRetriesPerRequest: 1, disconnectTimeout: 200, ...REQUEST_REDIS_OPTIONS })
  const deliveries = producerQueue<DeliveryJob>(WEBHOOK_DELIVERIES_QUEUE, redis, queuePrefix(opts.redisPrefix))
  logConnectionErrors(deliveries, opts.logger, 'delivery queue: connection error')
  const settings: Omit<EventsDomain, 'models' | 'logger'> = { deliveries, redis, redisPrefix: opts.redisPrefix, secretKeys: { current: opts.secretKey, previous: opts.previousSecretKey ?? null } }
  const running = await startDomainSubgraph({
    ...processOptionsOf(opts),
    name: 'events',
    typeDefs,
    resolvers,
    createModels: createEventsModels,
    extendContext: (base, models): EventsContext => ({ ...base, domain: { ...settings, models, logger: base.log } }),
  })
  const prune = startPrune(
    'test delivery prune',
    () => pruneTestDeliveries({ models: running.models }),
    TEST_DELIVERY_PRUNE_MS,
    opts.logger,
    'deliveries: deleted test deliveries older than the retention',
  )
  return {
    url: running.url,
    models: running.models,
    async stop() {
      await running.stopServing()
      await prune.stop()
      await running.stop()
      await deliveries.close()
      redis.disconnect()
    },
  }
}
