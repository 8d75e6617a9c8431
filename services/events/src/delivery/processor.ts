/**
 * One `webhook-deliveries` job = one attempt to deliver (docs/events.md: "Delivery states", "Attempt log",
 * "Crash safety"):
 *
 *   1. load the delivery; delivered already (or gone) → done, nothing sent;
 *   2. an attempt still `sending` belongs to a worker that died mid-attempt → `interrupted`;
 *   3. read the app environment's endpoint through the gateway; paused → `held`, the job goes back to delayed
 *      without consuming an attempt, and nothing is logged as an attempt;
 *   4. write the attempt (`sending`, the next free number of the unique (deliveryId, number) index), then send on
 *      the channel;
 *   5. the outcome is one write to the attempt and one to the delivery (its status, attemptCount and lastAttemptAt
 *      together). 2xx → delivered. Anything else → the attempt failed; the next wait comes from the schedule (lengthened by a
 *      Retry-After up to the next step) and is handed to BullMQ through the thrown AttemptFailedError (the workers'
 *      backoffStrategy reads it), or, after the run's last attempt, the delivery is `failed`.
 *
 * A dead worker's attempt is found by its id (`<deliveryId>.<number>`): the last one counted, or the number the next
 * openAttempt runs into. The worker holding the job's lock is the delivery's only writer while it runs (a redrive
 * waits for an active job to finish), so every write names the delivery and its attempts by `_id` alone: on FerretDB
 * only such filters are answered without decoding the whole collection (docs/events.md, "Performance on FerretDB").
 */
import { DelayedError, type Job } from 'bullmq'
import type { Logger } from 'pino'
import type { Agent } from 'undici'
import type { DeliverySettings } from '@svc/config'
import type { MintServiceJwtParams } from '@svc/service-auth'
import { MAX_ATTEMPTS, nextDelayMs } from '../domain/schedule'
import { activeSigningSecrets } from '../domain/signing-secrets'
import { attemptId, isDuplicateKeyError, type Channel, type DeliveryDoc, type EventsModels } from '../models'
import type { DeliveryJob } from '../queues'
import { receiveEventUrl, webhookRequest, xrpcRequest } from './channels'
import type { EndpointClient } from './endpoint'
import { parseRetryAfter } from './retry-after'
import { isDelivered, sendAttempt, type AttemptResult, type OutgoingRequest } from './transport'
import type { Environment } from '@svc/vocabulary'

export const INTERRUPTED_ERROR = 'the worker stopped during this attempt'
export const NOT_CONFIGURED_ERROR = 'no webhook or receiver configured'

/** A failed attempt; `delayMs` is the wait before the next one (null: it was the run's last). */
export class AttemptFailedError extends Error {
  override readonly name = 'AttemptFailedError'
  constructor(
    message: string,
    readonly delayMs: number | null,
  ) {
    super(message)
  }
}

/**
 * The workers' `settings.backoffStrategy`: the delay the processor computed (and recorded as nextAttemptAt); for any
 * other error (the database was unreachable, …) the plain schedule.
 */
export function deliveryBackoff(scale: number) {
  return (attemptsMade: number, _type?: string, err?: Error): number => {
    if (err instanceof AttemptFailedError && err.delayMs !== null) return err.delayMs
    return nextDelayMs(Math.max(1, attemptsMade), { scale }) ?? 0
  }
}

export interface DeliveryProcessorDeps {
  models: EventsModels
  logger: Logger
  delivery: DeliverySettings
  /** WEBHOOK_SECRET_KEY */
  secretKey: string
  /** the XRPC channel's issuer */
  service: { did: string; keypair: MintServiceJwtParams['keypair'] }
  endpoints: EndpointClient
  /** one guarded agent per environment (transport.ts) */
  agents: Record<Environment, Agent>
}

export type ProcessOutcome = 'delivered' | 'already-delivered' | 'gone'

type Prepared = { request: OutgoingRequest } | { error: string }

function httpUrl(raw: string): string | null {
  try {
    const url = new URL(raw)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.toString() : null
  } catch {
    return null
  }
}

/** One line per attempt in the job's log, shown in the operators' board (best effort: Redis trouble never fails an attempt). */
function boardLog(job: Job<DeliveryJob>, line: string): Promise<unknown> {
  return job.log(line).catch(() => undefined)
}

export function createDeliveryProcessor(deps: DeliveryProcessorDeps) {
  const { models, delivery: settings } = deps
  const log = deps.logger

  /**
   * Attempt `number` of the delivery, if a worker that died left it `sending`, becomes `interrupted`. The delivery
   * counts an attempt only with its outcome, so a dead worker's attempt is the number the next openAttempt runs into
   * (the unique index refuses it): it is looked up by id there, never by scanning the log. The last one counted is
   * checked too, for deliveries counted the earlier way (the count written when the attempt opened).
   */
  async function markInterrupted(deliveryId: string, number: number): Promise<void> {
    if (number < 1) return
    const _id = attemptId(deliveryId, number)
    const attempt = await models.Attempt.findById(_id, { outcome: 1 }).lean()
    if (attempt?.outcome !== 'sending') return
    await models.Attempt.updateOne({ _id }, { $set: { outcome: 'interrupted', error: INTERRUPTED_ERROR } })
    log.warn({ deliveryId, number }, 'delivery attempt interrupted by a worker that stopped')
  }

  /**
   * Writes the attempt before anything is sent: the next free number (a duplicate means a dead worker's attempt took
   * it). The delivery's count is written with the outcome, not here: one write fewer per attempt.
   */
  async function openAttempt(d: DeliveryDoc, channel: Channel | null, url: string | null) {
    const attemptedAt = new Date()
    for (let number = d.attemptCount + 1, tries = 0; tries < 100; number++, tries++) {
      try {
        const doc = await models.Attempt.create({
          deliveryId: d._id,
          appDid: d.appDid,
          environment: d.environment,
          number,
          run: d.run,
          channel,
          url,
          attemptedAt,
          outcome: 'sending',
        })
        return { id: doc._id, number, attemptedAt }
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err
        await markInterrupted(d._id, number)
      }
    }
    throw new Error(`delivery ${d._id}: no free attempt number`)
  }

  async function hold(job: Job<DeliveryJob>, token: string | undefined, d: DeliveryDoc): Promise<never> {
    const nextAttemptAt = new Date(Date.now() + settings.holdRecheckMs)
    await models.Delivery.updateOne({ _id: d._id }, { $set: { status: 'held', nextAttemptAt } })
    log.debug({ deliveryId: d._id, nextAttemptAt }, 'delivery held: the webhook is paused')
    if (!token) throw new Error('a held delivery needs the job token')
    await job.moveToDelayed(nextAttemptAt.getTime(), token)
    throw new DelayedError()
  }

  /** The channel's request; a problem on our side (no secret, one that does not decrypt) fails the attempt unsent. */
  async function prepare(d: DeliveryDoc, channel: Channel, url: string): Promise<Prepared> {
    const target = { id: d._id, appDid: d.appDid, body: d.body }
    if (channel === 'xrpc') {
      try {
        return { request: await xrpcRequest(url, target, deps.service) }
      } catch (err) {
        log.error({ deliveryId: d._id, err: { message: (err as Error).message } }, 'could not sign the service-auth token')
        return { error: 'could not sign the service-auth token' }
      }
    }
    let secrets: string[]
    try {
      secrets = await activeSigningSecrets(models, deps.secretKey, d.appDid, d.environment as Environment)
    } catch (err) {
      log.error({ deliveryId: d._id, err: { message: (err as Error).message } }, 'could not read the signing secrets (WEBHOOK_SECRET_KEY changed?)')
      return { error: 'could not read the signing secrets' }
    }
    if (secrets.length === 0) return { error: 'no signing secret for this app environment' }
    return { request: webhookRequest(url, target, secrets) }
  }

  return async function processDelivery(job: Job<DeliveryJob>, token?: string): Promise<ProcessOutcome> {
    const deliveryId = job.data.deliveryId
    const d = (await models.Delivery.findById(deliveryId).lean()) as DeliveryDoc | null
    if (!d) {
      log.warn({ deliveryId }, 'delivery job without a delivery: nothing sent')
      return 'gone'
    }
    if (d.status === 'delivered') return 'already-delivered'
    await markInterrupted(d._id, d.attemptCount)

    const lookup = await deps.endpoints.lookup(d.appDid, d.environment, `${d._id}.${d.attemptCount + 1}`)
    if (lookup.kind === 'found' && lookup.endpoint.paused) return hold(job, token, d)

    // Where this attempt goes, or why it cannot go anywhere (still a failed attempt, retried on the schedule).
    let channel: Channel | null = null
    let target: string | null = null
    let failure: string | null = null
    if (lookup.kind === 'unavailable') failure = lookup.error
    else if (lookup.kind === 'not-configured') failure = `${NOT_CONFIGURED_ERROR} (${lookup.reason})`
    else {
      channel = lookup.endpoint.channel
      const raw = lookup.endpoint.configured ? lookup.endpoint.url : null
      if (raw === null) failure = NOT_CONFIGURED_ERROR
      else if ((target = httpUrl(raw)) === null) failure = 'the configured URL is not a valid http(s) URL'
    }

    const attempt = await openAttempt(d, channel, target !== null && channel === 'xrpc' ? receiveEventUrl(target) : target)
    let result: AttemptResult
    if (failure === null && channel !== null && target !== null) {
      const prepared = await prepare(d, channel, target)
      result = 'error' in prepared
        ? { statusCode: null, durationMs: 0, error: prepared.error, responseExcerpt: null, retryAfter: null }
        : await sendAttempt(deps.agents[d.environment as Environment], prepared.request, settings.timeoutMs)
    } else {
      result = { statusCode: null, durationMs: 0, error: failure ?? NOT_CONFIGURED_ERROR, responseExcerpt: null, retryAfter: null }
    }

    const finishedAt = new Date()
    const logged = { deliveryId: d._id, appDid: d.appDid, environment: d.environment, number: attempt.number, channel, statusCode: result.statusCode, durationMs: result.durationMs }
    if (isDelivered(result)) {
      await models.Attempt.updateOne(
        { _id: attempt.id },
        { $set: { outcome: 'delivered', statusCode: result.statusCode, durationMs: result.durationMs, responseExcerpt: result.responseExcerpt, error: null, nextAttemptAt: null } },
      )
      await models.Delivery.updateOne(
        { _id: d._id },
        {
          $set: {
            status: 'delivered',
            attemptCount: attempt.number,
            lastAttemptAt: attempt.attemptedAt,
            deliveredAt: finishedAt,
            lastStatusCode: result.statusCode,
            lastError: null,
            nextAttemptAt: null,
          },
        },
      )
      log.info({ ...logged, outcome: 'delivered' }, 'delivery attempt')
      await boardLog(job, `attempt ${attempt.number} (${channel}): delivered, HTTP ${result.statusCode} in ${result.durationMs} ms`)
      return 'delivered'
    }

    const attemptsInRun = job.attemptsMade + 1
    const last = attemptsInRun >= (job.opts.attempts ?? MAX_ATTEMPTS)
    const delayMs = last ? null : nextDelayMs(attemptsInRun, { scale: settings.scheduleScale }, parseRetryAfter(result.retryAfter ?? undefined, finishedAt.getTime()))
    const nextAttemptAt = delayMs === null ? null : new Date(finishedAt.getTime() + delayMs)
    await models.Attempt.updateOne(
      { _id: attempt.id },
      {
        $set: {
          outcome: 'failed',
          statusCode: result.statusCode,
          durationMs: result.durationMs,
          responseExcerpt: result.responseExcerpt,
          error: result.error,
          nextAttemptAt,
        },
      },
    )
    const status = nextAttemptAt === null ? { status: 'failed', failedAt: finishedAt } : { status: 'pending' }
    await models.Delivery.updateOne(
      { _id: d._id },
      { $set: { ...status, attemptCount: attempt.number, lastAttemptAt: attempt.attemptedAt, nextAttemptAt, lastStatusCode: result.statusCode, lastError: result.error } },
    )
    log.info({ ...logged, outcome: 'failed', error: result.error, nextAttemptAt, final: nextAttemptAt === null }, 'delivery attempt')
    const next = nextAttemptAt === null ? 'no attempts left in this run: failed, waiting for a redrive' : `next attempt at ${nextAttemptAt.toISOString()}`
    await boardLog(job, `attempt ${attempt.number} (${channel ?? 'no channel'}): ${result.error ?? 'not delivered'} after ${result.durationMs} ms; ${next}`)
    throw new AttemptFailedError(`attempt ${attempt.number} failed: ${result.error ?? 'not delivered'}`, delayMs)
  }
}
