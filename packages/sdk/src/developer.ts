/**
 * The developer utility routes on the checkout host, with a restricted API key (`svc_rk_test_…` or `svc_rk_live_…`,
 * from the operator): the developer configuration, a test event, the delivery log and redrives. The key is bound to
 * one app and environment, and names the environment every call acts in. Errors are SvcError, as the XRPC client's.
 */
import { apiEnvironment } from '@svc/api-keys'
import type { GraphTypes } from '@svc/graph'
import type { DeliveryStatus, Environment } from '@svc/vocabulary'
import { exchange, MAX_TIMER_MS } from './client'

/** `GET /api/app/developer/config` (permission `app.config.read`). */
export type DeveloperConfig = Omit<GraphTypes.DeveloperConfigQuery['developerConfig'], '__typename'>
/** One entry of the delivery log (`GET /api/webhooks/atm`, permission `webhook.deliveries.read`), newest first. */
export type DeliveryLogEntry = Omit<GraphTypes.DeliveriesQuery['deliveries'][number], '__typename'>
export type { DeliveryStatus }

export interface TestEventResult {
  ok: true
  environment: Environment
  /** the test delivery (`whd_…`): find it in the delivery log */
  deliveryId: string
}

export interface RedriveResult {
  ok: true
  /** the deliveries this call queued again */
  queued: number
  /** why a redrive of one delivery queued nothing (already queued, another redrive won, its last job still active) */
  reason?: string
}

export interface DeveloperClientOptions {
  /** `{checkout_url}`: the checkout host serving `/api/*`, e.g. `https://pay.svc.example`. */
  checkoutUrl: string
  /** The app the key was issued for. */
  appDid: string
  /** The restricted API key; keep it secret (it is never logged by the service, only its first characters). */
  apiKey: string
  /** A fetch implementation (default: the global fetch). */
  fetch?: typeof fetch
  /** Per-request timeout in ms (default 30 000); elapsing gives SvcError status 0, error `Timeout` (transient). */
  requestTimeoutMs?: number
}

export interface DeveloperClient {
  readonly appDid: string
  /** the key's environment: every call acts in it */
  readonly environment: Environment
  getConfig(options?: { signal?: AbortSignal }): Promise<DeveloperConfig>
  /** Queues an `app.webhook.test` event to the app's webhook or XRPC receiver (a test key only); one delivery per call. */
  sendTestEvent(options?: { signal?: AbortSignal }): Promise<TestEventResult>
  /** The newest deliveries, `limit` 1–100 (default 20), of one `status` when given. */
  listDeliveries(query?: { status?: DeliveryStatus; limit?: number }, options?: { signal?: AbortSignal }): Promise<DeliveryLogEntry[]>
  /** Sends one delivery again (`webhook.deliveries.redrive`); repeating it while its run is under way queues nothing more. */
  redriveDelivery(deliveryId: string, options?: { signal?: AbortSignal }): Promise<RedriveResult>
  /** Sends the failed deliveries created at or after `since` again, oldest first, at most `limit` (1–1000, default 100). */
  redriveFailed(query?: { since?: Date | string; limit?: number }, options?: { signal?: AbortSignal }): Promise<RedriveResult>
}

export function createDeveloperClient(options: DeveloperClientOptions): DeveloperClient {
  const keyEnvironment = apiEnvironment(options.apiKey)
  if (!keyEnvironment) throw new TypeError('apiKey must be a restricted API key: svc_rk_test_… or svc_rk_live_… and 32 characters, copied whole')
  const environment: Environment = keyEnvironment
  const base = new URL(options.checkoutUrl)
  const timeoutMs = options.requestTimeoutMs ?? 30_000
  if (!(timeoutMs >= 1 && timeoutMs <= MAX_TIMER_MS)) throw new RangeError(`requestTimeoutMs must be from 1 to ${MAX_TIMER_MS} ms`)
  const fetchImpl = options.fetch ?? globalThis.fetch

  async function route(method: 'GET' | 'POST', path: string, query: Record<string, string | number | undefined>, body: unknown, signal: AbortSignal | undefined) {
    const url = new URL(path.slice(1), base.href.endsWith('/') ? base : `${base.href}/`)
    url.searchParams.set('app', options.appDid)
    url.searchParams.set('environment', environment)
    for (const [key, value] of Object.entries(query)) if (value !== undefined) url.searchParams.set(key, String(value))
    const headers: Record<string, string> = { authorization: `Bearer ${options.apiKey}`, accept: 'application/json' }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const init: RequestInit = { method, headers, redirect: 'manual', body: body === undefined ? undefined : JSON.stringify(body) }
    return exchange(fetchImpl, url, init, { label: `${method} ${path}`, timeoutMs, signal, urlOption: 'checkoutUrl' })
  }

  return {
    appDid: options.appDid,
    environment,
    getConfig: async (o) => (await route('GET', '/api/app/developer/config', {}, undefined, o?.signal)) as DeveloperConfig,
    sendTestEvent: async (o) => (await route('POST', '/api/app/developer/test-event', {}, undefined, o?.signal)) as unknown as TestEventResult,
    listDeliveries: async (q = {}, o) => ((await route('GET', '/api/webhooks/atm', { status: q.status, limit: q.limit }, undefined, o?.signal)).deliveries ?? []) as DeliveryLogEntry[],
    redriveDelivery: async (deliveryId, o) => (await route('POST', '/api/webhooks/atm', {}, { deliveryId }, o?.signal)) as unknown as RedriveResult,
    redriveFailed: async (q = {}, o) => {
      const since = q.since instanceof Date ? q.since.toISOString() : q.since
      return (await route('POST', '/api/webhooks/atm', {}, { status: 'failed', ...(since === undefined ? {} : { since }), ...(q.limit === undefined ? {} : { limit: q.limit }) }, o?.signal)) as unknown as RedriveResult
    },
  }
}
