/** What the events domain's code works with, in the subgraph and in the workers. */
import type { Queue } from 'bullmq'
import type Redis from 'ioredis'
import type { Logger } from 'pino'
import type { EventsModels } from '../models'
import type { DeliveryJob } from '../queues'

export interface EventsDomain {
  models: EventsModels
  /** the `webhook-deliveries` queue */
  deliveries: Queue<DeliveryJob>
  /** atomic claims (redrive) */
  redis: Redis
  /** REDIS_PREFIX: every key of this deployment starts with it */
  redisPrefix: string
  /** WEBHOOK_SECRET_KEY, which encrypts the signing secrets, and WEBHOOK_SECRET_KEY_PREVIOUS during its rotation */
  secretKeys: { current: string; previous: string | null }
  logger: Logger
}
