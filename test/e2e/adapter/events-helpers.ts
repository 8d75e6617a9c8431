/**
 * Shared helpers of the developer utility route tests that touch events (test-event, the delivery log, redrive):
 * calls on the checkout host, the real BullMQ `webhook-deliveries` queue of the stack, and ways to put a delivery
 * into a state without a receiver (its document written raw, its job moved to failed or completed by a worker of the
 * test's own that takes exactly that job). Not a test file itself.
 */
import { randomUUID } from 'node:crypto'
import { Queue, UnrecoverableError, Worker, type Job } from 'bullmq'
import Redis from 'ioredis'
import { DELIVERY_JOB_OPTIONS, newDeliveryId, queuePrefix, serializeEnvelope, WEBHOOK_DELIVERIES_QUEUE, type AttemptDoc, type DeliveryJob } from '@svc/events'
import type { TestStack } from '../../stack'
import { httpRequest, type HttpResult } from './helpers'

export const TEST_EVENT_PATH = '/api/app/developer/test-event'
export const ATM_PATH = '/api/webhooks/atm'
export const ALL_PERMISSIONS = ['app.config.read', 'webhook.test.write', 'webhook.deliveries.read', 'webhook.deliveries.redrive']

export function checkoutUrl(stack: TestStack, path: string, query: Record<string, string | string[] | undefined> = {}): string {
  const url = new URL(path, stack.checkoutUrl)
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined) continue
    for (const one of Array.isArray(v) ? v : [v]) url.searchParams.append(k, one)
  }
  return url.toString()
}

export function testEvent(stack: TestStack, query: Record<string, string | string[] | undefined>, headers: Record<string, string> = {}): Promise<HttpResult> {
  return httpRequest(checkoutUrl(stack, TEST_EVENT_PATH, query), { method: 'POST', headers })
}

export function listDeliveries(stack: TestStack, query: Record<string, string | string[] | undefined>, headers: Record<string, string> = {}): Promise<HttpResult> {
  return httpRequest(checkoutUrl(stack, ATM_PATH, query), { headers })
}

/** POST /api/webhooks/atm with a JSON body (an object is serialized; a string is sent as it is). */
export function redrive(
  stack: TestStack,
  query: Record<string, string | string[] | undefined>,
  body: unknown,
  headers: Record<string, string> = {},
  contentType: string | null = 'application/json',
): Promise<HttpResult> {
  const init: RequestInit = { method: 'POST', headers: { ...headers, ...(contentType ? { 'content-type': contentType } : {}) } }
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body)
  return httpRequest(checkoutUrl(stack, ATM_PATH, query), init)
}

const connections = new WeakMap<Queue<DeliveryJob>, Redis>()

/** The stack's `webhook-deliveries` queue, on a connection of its own (closeQueue closes both). */
export function deliveriesQueue(stack: TestStack): Queue<DeliveryJob> {
  const connection = new Redis(stack.redisUrl, { maxRetriesPerRequest: null })
  const queue = new Queue<DeliveryJob>(WEBHOOK_DELIVERIES_QUEUE, { connection, prefix: queuePrefix(stack.redisPrefix) })
  connections.set(queue, connection)
  return queue
}

export async function closeQueue(queue: Queue<DeliveryJob> | undefined): Promise<void> {
  if (!queue) return
  await queue.close()
  connections.get(queue)?.disconnect()
}

export async function jobState(queue: Queue<DeliveryJob>, deliveryId: string): Promise<string> {
  const job = await queue.getJob(deliveryId)
  return job ? job.getState() : 'missing'
}

/**
 * Finishes the delivery's job the way a worker would after the run's last attempt (failed) or a 2xx (completed):
 * the job is put at the head of the wait list (re-added with the same id and options, lifo), taken by a worker of
 * this test and moved; the delivery document gets the matching state. Needs a stack without running workers.
 */
export async function finishDelivery(stack: TestStack, queue: Queue<DeliveryJob>, deliveryId: string, outcome: 'failed' | 'delivered'): Promise<void> {
  const old = await queue.getJob(deliveryId)
  if (old) await old.remove()
  await queue.add('deliver', { deliveryId }, { ...DELIVERY_JOB_OPTIONS, jobId: deliveryId, lifo: true })
  const connection = new Redis(stack.redisUrl, { maxRetriesPerRequest: null })
  const worker = new Worker<DeliveryJob>(WEBHOOK_DELIVERIES_QUEUE, null, { connection, prefix: queuePrefix(stack.redisPrefix), autorun: false })
  try {
    const token = randomUUID()
    const job = (await worker.getNextJob(token, { block: false })) as Job<DeliveryJob> | undefined
    if (job?.id !== deliveryId) throw new Error(`expected the job ${deliveryId} at the head of the queue, got ${job?.id}`)
    if (outcome === 'failed') await job.moveToFailed(new UnrecoverableError('test: the receiver kept failing'), token, false)
    else await job.moveToCompleted('delivered', token, false)
  } finally {
    await worker.close()
    connection.disconnect()
  }
  const now = new Date()
  const set =
    outcome === 'failed'
      ? { status: 'failed', attemptCount: 14, failedAt: now, lastAttemptAt: now, nextAttemptAt: null, lastError: 'HTTP 500', lastStatusCode: 500 }
      : { status: 'delivered', attemptCount: 1, deliveredAt: now, lastAttemptAt: now, nextAttemptAt: null, lastStatusCode: 200 }
  await stack.events.Delivery.updateOne({ _id: deliveryId }, { $set: set })
}

/** A delivery document written directly (no job), with the given creation time and state. */
export async function insertDelivery(
  stack: TestStack,
  d: { appDid: string; environment: 'test' | 'live'; status?: string; createdAt?: Date; eventType?: string; run?: number },
): Promise<string> {
  const id = newDeliveryId()
  const createdAt = d.createdAt ?? new Date()
  const eventType = d.eventType ?? 'payment.completed'
  await stack.events.Delivery.collection.insertOne({
    _id: id as never,
    appDid: d.appDid,
    environment: d.environment,
    eventId: null,
    eventType,
    source: 'payments',
    body: serializeEnvelope({ id, type: eventType, createdAt: createdAt.toISOString(), apiVersion: '2026-06', environment: d.environment, data: {} }),
    status: d.status ?? 'pending',
    attemptCount: 0,
    run: d.run ?? 1,
    lastAttemptAt: null,
    nextAttemptAt: null,
    lastStatusCode: null,
    lastError: null,
    deliveredAt: null,
    failedAt: d.status === 'failed' ? createdAt : null,
    createdAt,
    updatedAt: createdAt,
  })
  return id
}

/** Appends an entry to a delivery's attempt log, as the delivery worker writes it. */
export async function pushAttempt(stack: TestStack, deliveryId: string, attempt: AttemptDoc): Promise<void> {
  const res = await stack.events.Delivery.updateOne({ _id: deliveryId }, { $push: { attempts: attempt } })
  if (res.matchedCount !== 1) throw new Error(`no delivery ${deliveryId}`)
}

/** Everything a listing must leave unchanged: the documents and the jobs' states. */
export async function snapshot(stack: TestStack, queue: Queue<DeliveryJob>, appDid: string) {
  const deliveries = await stack.events.Delivery.find({ appDid }).sort({ _id: 1 }).lean()
  const jobs = await Promise.all(deliveries.map(async (d) => [d._id, await jobState(queue, d._id as string)]))
  return JSON.stringify({ deliveries, jobs })
}
