/**
 * Helpers of the delivery tests: configure an app's channel (the apps configuration document, written raw), produce
 * events (a domain event written to the payments outbox, which the stack's relay publishes; a `domain-events` job
 * published directly, as a relay repeat; or a test-style delivery), and poll the delivery log.
 */
import { randomBytes } from 'node:crypto'
import { Queue } from 'bullmq'
import Redis from 'ioredis'
import { writeOutboxEvent, type DomainEventJob } from '@svc/outbox'
import type { EventType } from '@svc/vocabulary'
import type { TestApp, TestStack } from '../../../stack'
import { startReceiver, type AnswerFn, type Receiver } from './receiver'
import {
  createDelivery,
  ensureSigningSecret,
  deliveryIdForEvent,
  DOMAIN_EVENTS_QUEUE,
  enqueueDelivery,
  newDeliveryId,
  queuePrefix,
  WEBHOOK_DELIVERIES_QUEUE,
  type AttemptDoc,
  type DeliveryDoc,
  type DeliveryJob,
} from '@svc/events'

export interface ChannelConfig {
  url?: string | null
  paused?: boolean
  channel?: 'webhook' | 'xrpc'
  receiverUrl?: string | null
}

/**
 * A fresh app with a test signing secret and its webhook pointing at a fresh receiver (at `url(receiver)`, by default
 * its `/hook`), kept in `receivers` for the file to close.
 */
export async function appWithReceiver(
  stack: TestStack,
  receivers: Receiver[],
  answer: AnswerFn,
  opts: { url?: (r: Receiver) => string; paused?: boolean } = {},
): Promise<{ app: TestApp; receiver: Receiver }> {
  const receiver = await startReceiver(answer)
  receivers.push(receiver)
  const app = await stack.newApp()
  await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app.did, 'test')
  await configureChannel(stack, app.did, { url: (opts.url ?? ((r) => `${r.url}/hook`))(receiver), paused: opts.paused ?? false })
  return { app, receiver }
}

/** Sets the app environment's `webhook` settings directly in the apps database (what updateConfig stores). */
export async function configureChannel(stack: TestStack, appDid: string, config: ChannelConfig, environment: 'test' | 'live' = 'test'): Promise<void> {
  const webhook = { url: config.url ?? null, paused: config.paused ?? false, channel: config.channel ?? 'webhook', receiverUrl: config.receiverUrl ?? null }
  const res = await stack.models.AppEnvironment.collection.updateOne({ appDid, environment }, { $set: { webhook } })
  if (res.matchedCount !== 1) throw new Error(`no ${environment} configuration for ${appDid}`)
}

/** The stack's queues, as an outbox relay and the events subgraph use them. */
export function stackQueues(stack: TestStack) {
  const connection = new Redis(stack.redisUrl, { maxRetriesPerRequest: null })
  const prefix = queuePrefix(stack.redisPrefix)
  const domainEvents = new Queue<DomainEventJob>(DOMAIN_EVENTS_QUEUE, { connection, prefix })
  const deliveries = new Queue<DeliveryJob>(WEBHOOK_DELIVERIES_QUEUE, { connection, prefix })
  return {
    domainEvents,
    deliveries,
    close: async () => {
      await Promise.all([domainEvents.close(), deliveries.close()])
      await connection.quit()
    },
  }
}
export type StackQueues = ReturnType<typeof stackQueues>

export const newEventId = () => `evt_${randomBytes(16).toString('hex')}`

export interface TestEvent {
  appDid: string
  type?: EventType
  environment?: 'test' | 'live'
  data?: Record<string, unknown>
  occurredAt?: Date
}

/**
 * Writes a domain event to the payments outbox, as the payments domain does with a state change; the stack's outbox
 * relay puts it on `domain-events`. Returns the event id and the id of the delivery it becomes.
 */
export async function writeEvent(stack: TestStack, event: TestEvent): Promise<{ eventId: string; deliveryId: string }> {
  const eventId = await writeOutboxEvent(stack.payments.Outbox, {
    type: event.type ?? 'payment.completed',
    environment: event.environment ?? 'test',
    appDid: event.appDid,
    data: event.data ?? { paymentUri: 'at://did:web:svc.test/money.svc.payment.record/3l2abc', amount: 1500, currency: 'usd' },
    key: `delivery-tests:${randomBytes(12).toString('hex')}`,
    occurredAt: event.occurredAt,
  })
  return { eventId, deliveryId: deliveryIdForEvent(eventId) }
}

/**
 * Publishes a domain event the way an outbox relay does (job id = event id, job name = type) and returns the id of
 * the delivery it becomes. `jobId` overrides the job id (a relay repeat after the first job was removed).
 */
export async function publishDomainEvent(
  queues: StackQueues,
  event: Partial<DomainEventJob> & Pick<DomainEventJob, 'appDid'>,
  jobId?: string,
): Promise<{ eventId: string; deliveryId: string; job: DomainEventJob }> {
  const job: DomainEventJob = {
    eventId: event.eventId ?? newEventId(),
    source: event.source ?? 'payments',
    type: event.type ?? 'payment.completed',
    environment: event.environment ?? 'test',
    appDid: event.appDid,
    data: event.data ?? { paymentUri: 'at://did:web:svc.test/money.svc.payment.record/3l2abc', amount: 1500, currency: 'usd' },
    occurredAt: event.occurredAt ?? new Date().toISOString(),
  }
  await queues.domainEvents.add(job.type, job, { jobId: jobId ?? job.eventId, removeOnComplete: false, removeOnFail: false })
  return { eventId: job.eventId, deliveryId: deliveryIdForEvent(job.eventId), job }
}

/** A test-style delivery (createDelivery + enqueueDelivery), as the test-event utility makes one. */
export async function queueTestDelivery(stack: TestStack, queues: StackQueues, appDid: string, environment: 'test' | 'live' = 'test', type = 'app.webhook.test'): Promise<string> {
  const id = newDeliveryId()
  const delivery = await createDelivery(stack.deliveryLog, {
    id,
    appDid,
    environment,
    eventId: null,
    eventType: type,
    source: 'test',
    createdAt: new Date(),
    data: { test: true, message: 'hello from the delivery tests', requestedAt: new Date().toISOString() },
  })
  await enqueueDelivery(queues.deliveries, delivery)
  return id
}

/** Polls until `check` returns something truthy; fails with `what` after `timeoutMs`. */
export async function waitFor<T>(check: () => Promise<T | null | undefined | false>, what: string, timeoutMs = 20_000, intervalMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}

export async function getDelivery(stack: TestStack, id: string): Promise<DeliveryDoc | null> {
  return (await stack.events.Delivery.findById(id).lean()) as DeliveryDoc | null
}

/** Waits until the delivery has one of `statuses`. */
export async function waitForStatus(stack: TestStack, id: string, statuses: string | string[], timeoutMs = 20_000): Promise<DeliveryDoc> {
  const wanted = Array.isArray(statuses) ? statuses : [statuses]
  return waitFor(async () => {
    const d = await getDelivery(stack, id)
    return d && wanted.includes(d.status) ? d : null
  }, `delivery ${id} to be ${wanted.join(' or ')}`, timeoutMs)
}

/** The delivery's attempt log, by number. */
export async function attemptsOf(stack: TestStack, deliveryId: string): Promise<AttemptDoc[]> {
  const d = await getDelivery(stack, deliveryId)
  return [...(d?.attempts ?? [])].sort((a, b) => a.number - b.number)
}
