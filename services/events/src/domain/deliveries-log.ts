/**
 * The delivery log (docs/events.md, "Delivery states" and "Attempt log"): an app environment's deliveries, newest
 * first, each with its attempts (kept in the delivery's own document). Every read filters on app DID and environment.
 */
import { ContractError } from '@svc/errors'
import { ATTEMPT_LOG_LIMIT, DELIVERY_STATUSES, type AttemptDoc, type DeliveryDoc, type DeliveryStatus, type EventsModels } from '../models'
import { parseEnvironment } from '@svc/vocabulary'
import { LOG_ORDER, newestByPages, type DeliveryLogStore } from './delivery-log-pages'
import type { Delivery, DeliveryAttempt as AttemptView } from '../generated/graph-types'

export const DEFAULT_LIST_LIMIT = 20
export const MAX_LIST_LIMIT = 100

export type { AttemptView }

/** The SDL's Delivery as its resolvers receive it (`body` is shown to operators only). */
export type DeliveryView = Omit<Delivery, 'body'> & {
  /** the serialized envelope */
  body: string
}

const iso = (d: Date | null | undefined): string | null => (d instanceof Date ? d.toISOString() : null)

export function parseStatus(value: unknown): DeliveryStatus | null {
  if (value === undefined || value === null) return null
  if ((DELIVERY_STATUSES as readonly unknown[]).includes(value)) return value as DeliveryStatus
  throw new ContractError('InvalidRequest', `status must be one of ${DELIVERY_STATUSES.join(', ')}`)
}

export function parseListLimit(value: unknown): number {
  if (value === undefined || value === null) return DEFAULT_LIST_LIMIT
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_LIST_LIMIT) {
    throw new ContractError('InvalidRequest', `limit must be an integer from 1 to ${MAX_LIST_LIMIT}`)
  }
  return value
}

export function toAttemptView(a: AttemptDoc): AttemptView {
  return {
    number: a.number,
    run: a.run,
    channel: a.channel ?? null,
    url: a.url ?? null,
    attemptedAt: a.attemptedAt.toISOString(),
    durationMs: a.durationMs ?? null,
    statusCode: a.statusCode ?? null,
    outcome: a.outcome,
    error: a.error ?? null,
    responseExcerpt: a.responseExcerpt ?? null,
    nextAttemptAt: iso(a.nextAttemptAt),
  }
}

export function toDeliveryViews(docs: DeliveryDoc[]): DeliveryView[] {
  return docs.map((d) => ({
    id: d._id,
    eventType: d.eventType,
    status: d.status,
    attemptCount: d.attemptCount ?? 0,
    appDid: d.appDid,
    environment: d.environment,
    eventId: d.eventId ?? null,
    createdAt: d.createdAt.toISOString(),
    lastAttemptAt: iso(d.lastAttemptAt),
    nextAttemptAt: iso(d.nextAttemptAt),
    lastStatusCode: d.lastStatusCode ?? null,
    lastError: d.lastError ?? null,
    deliveredAt: iso(d.deliveredAt),
    failedAt: iso(d.failedAt),
    body: d.body,
    attempts: [...(d.attempts ?? [])].sort((x, y) => x.number - y.number).slice(-ATTEMPT_LOG_LIMIT).map(toAttemptView),
  }))
}

export interface ListDeliveriesArgs {
  appDid: string
  environment: unknown
  status?: unknown
  limit?: unknown
}

/**
 * An app environment's deliveries, newest first (the log's order: delivery-log-pages.ts); read-only. The newest pages
 * of the log answer (with a status filter, those of its pages that hold enough of that status); when the pages
 * cannot tell, the full query does.
 */
export async function listDeliveries(store: Partial<DeliveryLogStore> & Pick<DeliveryLogStore, 'models'>, args: ListDeliveriesArgs): Promise<DeliveryView[]> {
  const environment = parseEnvironment(args.environment)
  const status = parseStatus(args.status)
  const limit = parseListLimit(args.limit)
  if (typeof args.appDid !== 'string' || args.appDid === '') throw new ContractError('InvalidRequest', 'appDid is required')
  const paged = await newestByPages(store, args.appDid, environment, limit, status)
  if (paged) return toDeliveryViews(paged)
  const filter: Record<string, unknown> = { appDid: args.appDid, environment }
  if (status) filter.status = status
  const docs = (await store.models.Delivery.find(filter).sort(LOG_ORDER).limit(limit).lean()) as DeliveryDoc[]
  return toDeliveryViews(docs)
}

/** One delivery by id (operators), or null. */
export async function findDelivery(models: EventsModels, id: string): Promise<DeliveryView | null> {
  const doc = (await models.Delivery.findById(id).lean()) as DeliveryDoc | null
  return doc ? toDeliveryViews([doc])[0]! : null
}
