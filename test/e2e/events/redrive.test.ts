/**
 * redriveDeliveries through the gateway (as the xrpc-adapter service), on the stack's real Redis and BullMQ: the
 * input rules, the per-run Redis claim (`<prefix>redrive:<id>:<run>`, an hour) that makes parallel redrives queue a
 * delivery once, the takeover of a claim whose winner died before moving the delivery on, and the job put back
 * (the failed / completed job replaced by a new one, which counts no attempts and no stalls, or a new job when it is gone).
 */
import { signedContext } from '@svc/testing'
import { randomUUID } from 'node:crypto'
import { UnrecoverableError, Worker, type Job } from 'bullmq'
import Redis from 'ioredis'
import { startStack, type TestStack } from '../../stack'
import { DELIVERY_JOB_OPTIONS, queuePrefix, WEBHOOK_DELIVERIES_QUEUE, type DeliveryJob } from '@svc/events'
import { NOT_QUEUED, REDRIVE_CLAIM_TTL_SECONDS, REDRIVE_SETTLE_MS, redriveClaimKey, redriveDeliveries, STALE_CLAIM_MS } from '@svc/events'
import pino from 'pino'
import { queueTestDelivery, stackQueues, type StackQueues } from './helpers/events'

let stack: TestStack
let queues: StackQueues

beforeAll(async () => {
  stack = await startStack('events-redrive', { workers: false })
  queues = stackQueues(stack)
})
afterAll(async () => {
  await queues?.close()
  await stack?.stop()
})

const REDRIVE = `mutation R($a: ID!, $e: String!, $input: RedriveInput!) { redriveDeliveries(appDid: $a, environment: $e, input: $input) { ok queued reason } }`

async function redrive(appDid: string, input: Record<string, unknown>, environment = 'test'): Promise<{ queued?: number; reason?: string; code?: string }> {
  const res = await fetch(stack.gatewayUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'svc-context': signedContext(stack.secrets.callerKeys, { kind: 'service', name: 'xrpc-adapter' }),
    },
    body: JSON.stringify({ query: REDRIVE, variables: { a: appDid, e: environment, input } }),
  })
  const body = (await res.json()) as { data?: { redriveDeliveries: { queued: number; reason: string | null } }; errors?: { extensions?: { code?: string } }[] }
  if (body.errors) return { code: body.errors[0]?.extensions?.code }
  const { queued, reason } = body.data!.redriveDeliveries
  return reason === null ? { queued } : { queued, reason }
}

/** A worker takes the delivery's job (put first in line) and holds it active, as one that stops mid-attempt does. */
async function takeJob(deliveryId: string): Promise<{ job: Job<DeliveryJob>; token: string; close(): Promise<void> }> {
  const old = await queues.deliveries.getJob(deliveryId)
  if (old) await old.remove()
  await queues.deliveries.add('deliver', { deliveryId }, { ...DELIVERY_JOB_OPTIONS, jobId: deliveryId, lifo: true })
  const connection = new Redis(stack.redisUrl, { maxRetriesPerRequest: null })
  const worker = new Worker<DeliveryJob>(WEBHOOK_DELIVERIES_QUEUE, null, { connection, prefix: queuePrefix(stack.redisPrefix), autorun: false })
  const close = async () => {
    await worker.close()
    connection.disconnect()
  }
  const token = randomUUID()
  const job = (await worker.getNextJob(token, { block: false })) as Job<DeliveryJob> | undefined
  if (job?.id !== deliveryId) {
    await close()
    throw new Error(`took job ${job?.id}, not ${deliveryId}`)
  }
  return { job, token, close }
}

/** Moves the delivery's job to failed or completed (as the workers leave it) and writes the matching state. */
async function finish(deliveryId: string, outcome: 'failed' | 'delivered'): Promise<void> {
  const { job, token, close } = await takeJob(deliveryId)
  try {
    if (outcome === 'failed') await job.moveToFailed(new UnrecoverableError('test'), token, false)
    else await job.moveToCompleted('ok', token, false)
  } finally {
    await close()
  }
  const now = new Date()
  await stack.events.Delivery.updateOne(
    { _id: deliveryId },
    { $set: outcome === 'failed' ? { status: 'failed', failedAt: now, attemptCount: 14 } : { status: 'delivered', deliveredAt: now, attemptCount: 1 } },
  )
}

const state = async (id: string) => (await queues.deliveries.getJob(id))?.getState() ?? 'missing'
const newApp = () => `did:web:redrive-${randomUUID().slice(0, 8)}.example.com`

describe('input', () => {
  it.each<[string, Record<string, unknown>]>([
    ['neither field', {}],
    ['both fields', { deliveryId: 'whd_x', status: 'failed' }],
    ['status other than failed', { status: 'pending' }],
    ['since not ISO', { status: 'failed', since: '01/02/2026' }],
    ['limit 0', { status: 'failed', limit: 0 }],
    ['limit 1001', { status: 'failed', limit: 1001 }],
    ['limit beside deliveryId', { deliveryId: 'whd_x', limit: 5 }],
  ])('%s is InvalidRequest', async (_label, input) => {
    expect(await redrive(newApp(), input)).toEqual({ code: 'InvalidRequest' })
  })

  it('an environment other than test or live is InvalidRequest', async () => {
    expect(await redrive(newApp(), { status: 'failed' }, 'prod')).toEqual({ code: 'InvalidRequest' })
  })

  it('an unknown id, or one of another app or environment, is DeliveryNotFound', async () => {
    const app = newApp()
    const id = await queueTestDelivery(stack, queues, app, 'live')
    await finish(id, 'failed')
    expect(await redrive(app, { deliveryId: id })).toEqual({ code: 'DeliveryNotFound' })
    expect(await redrive(newApp(), { deliveryId: id }, 'live')).toEqual({ code: 'DeliveryNotFound' })
    expect(await redrive(app, { deliveryId: `whd_${'f'.repeat(32)}` }, 'live')).toEqual({ code: 'DeliveryNotFound' })
    expect(await redrive(app, { deliveryId: id }, 'live')).toEqual({ queued: 1 })
  })
})

describe('the claim', () => {
  it('the winner sets the claim for the run it redrove, for an hour', async () => {
    const app = newApp()
    const id = await queueTestDelivery(stack, queues, app)
    await finish(id, 'failed')
    expect(await redrive(app, { deliveryId: id })).toEqual({ queued: 1 })
    const key = redriveClaimKey(stack.redisPrefix, id, 1)
    expect(await stack.redis.exists(key)).toBe(1)
    const ttl = await stack.redis.ttl(key)
    expect(REDRIVE_CLAIM_TTL_SECONDS).toBe(3600)
    expect(ttl).toBeGreaterThan(REDRIVE_CLAIM_TTL_SECONDS - 60)
    expect(ttl).toBeLessThanOrEqual(REDRIVE_CLAIM_TTL_SECONDS)
    expect(await stack.events.Delivery.findById(id).lean()).toMatchObject({ status: 'pending', run: 2, failedAt: null })
    expect(await state(id)).toBe('waiting')
  })

  it('20 parallel redrives of one failed delivery: queued 1 in total, one waiting job, run 2', async () => {
    const app = newApp()
    const id = await queueTestDelivery(stack, queues, app)
    await finish(id, 'failed')
    const results = await Promise.all(Array.from({ length: 20 }, () => redrive(app, { deliveryId: id })))
    expect(results.reduce((n, r) => n + (r.queued ?? NaN), 0)).toBe(1)
    expect(await stack.events.Delivery.findById(id).lean()).toMatchObject({ status: 'pending', run: 2 })
    const job = await queues.deliveries.getJob(id)
    expect(await job!.getState()).toBe('waiting')
    expect(job!.attemptsMade).toBe(0)
  })

  it('a claim held by a live redrive (recent) makes another one queue nothing', async () => {
    const app = newApp()
    const id = await queueTestDelivery(stack, queues, app)
    await finish(id, 'failed')
    await stack.redis.set(redriveClaimKey(stack.redisPrefix, id, 1), String(Date.now()), 'EX', 60)
    expect(await redrive(app, { deliveryId: id })).toEqual({ queued: 0, reason: NOT_QUEUED.parallel })
    expect(await stack.events.Delivery.findById(id).lean()).toMatchObject({ status: 'failed', run: 1 })
    expect(await state(id)).toBe('failed')
  })

  it('a claim whose winner died before moving the delivery on is taken over, once', async () => {
    const app = newApp()
    const id = await queueTestDelivery(stack, queues, app)
    await finish(id, 'failed')
    await stack.redis.set(redriveClaimKey(stack.redisPrefix, id, 1), String(Date.now() - STALE_CLAIM_MS - 1000), 'EX', 3600)
    const results = await Promise.all(Array.from({ length: 10 }, () => redrive(app, { deliveryId: id })))
    expect(results.reduce((n, r) => n + (r.queued ?? NaN), 0)).toBe(1)
    expect(await stack.events.Delivery.findById(id).lean()).toMatchObject({ status: 'pending', run: 2 })
    expect(await state(id)).toBe('waiting')
  })

  it('a claim winner that stalled past the takeover does not start the run again once the takeover started it', async () => {
    const app = newApp()
    const id = await queueTestDelivery(stack, queues, app)
    await finish(id, 'failed')
    // the use case itself, on this test's models, so that the first redrive's update can be held
    const domain = { models: stack.events, deliveries: queues.deliveries, redis: stack.redis, redisPrefix: stack.redisPrefix, logger: pino({ level: 'silent' }) }
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let reached!: () => void
    const atUpdate = new Promise<void>((resolve) => (reached = resolve))
    const original = stack.events.Delivery.updateOne.bind(stack.events.Delivery)
    const spy = jest.spyOn(stack.events.Delivery, 'updateOne').mockImplementationOnce(((...args: Parameters<typeof original>) => {
      reached()
      return gate.then(() => original(...args))
    }) as never)
    try {
      // A wins the claim, then stalls at its update; its claim looks abandoned to B, which starts run 2
      const a = redriveDeliveries(domain as never, app, 'test', { deliveryId: id })
      await atUpdate
      await stack.redis.set(redriveClaimKey(stack.redisPrefix, id, 1), String(Date.now() - STALE_CLAIM_MS - 1000), 'KEEPTTL')
      expect(await redriveDeliveries(domain as never, app, 'test', { deliveryId: id })).toEqual({ ok: true, queued: 1 })
      await finish(id, 'delivered')
      release()
      expect(await a).toEqual({ ok: true, queued: 0, reason: NOT_QUEUED.parallel })
    } finally {
      release()
      spy.mockRestore()
    }
    expect(await stack.events.Delivery.findById(id).lean()).toMatchObject({ status: 'delivered', run: 2 })
    expect(await state(id)).toBe('completed')
  })

  it('a run started by a redrive less than REDRIVE_SETTLE_MS ago is not redriven again, even once it ended', async () => {
    const app = newApp()
    const id = await queueTestDelivery(stack, queues, app)
    await finish(id, 'failed')
    expect(await redrive(app, { deliveryId: id })).toEqual({ queued: 1 })
    await finish(id, 'delivered') // the new run delivered at once
    expect(await redrive(app, { deliveryId: id })).toEqual({ queued: 0, reason: NOT_QUEUED.settling })
    expect(await state(id)).toBe('completed')
    await stack.redis.set(redriveClaimKey(stack.redisPrefix, id, 1), String(Date.now() - REDRIVE_SETTLE_MS - 1000), 'KEEPTTL')
    expect(await redrive(app, { deliveryId: id })).toEqual({ queued: 1 })
    expect(await stack.events.Delivery.findById(id).lean()).toMatchObject({ status: 'pending', run: 3 })
  })

  it('a delivered delivery: its completed job is replaced by a new one', async () => {
    const app = newApp()
    const id = await queueTestDelivery(stack, queues, app)
    await finish(id, 'delivered')
    expect(await state(id)).toBe('completed')
    expect(await redrive(app, { deliveryId: id })).toEqual({ queued: 1 })
    expect(await state(id)).toBe('waiting')
    expect((await queues.deliveries.getJob(id))!.attemptsMade).toBe(0)
  })

  it('a delivery whose job failed for stalling (its worker died 6 times): the new run starts with no stall counted', async () => {
    const app = newApp()
    const id = await queueTestDelivery(stack, queues, app)
    await finish(id, 'failed')
    // BullMQ counts a job's stalls in its hash (`stc`); past 5 it fails the job at its next stall
    const jobKey = `${queuePrefix(stack.redisPrefix)}:${WEBHOOK_DELIVERIES_QUEUE}:${id}`
    await stack.redis.hset(jobKey, 'stc', '6')
    expect(await redrive(app, { deliveryId: id })).toEqual({ queued: 1 })
    expect(await state(id)).toBe('waiting')
    expect(Number((await stack.redis.hget(jobKey, 'stc')) ?? 0)).toBe(0)
    expect((await queues.deliveries.getJob(id))!.data).toMatchObject({ deliveryId: id })
  })

  it('a failed delivery whose job a stopped worker still holds (active): queued 0, nothing changed; queued once BullMQ gives the job back', async () => {
    const app = newApp()
    const id = await queueTestDelivery(stack, queues, app)
    // a worker takes the job and stops without finishing it: the job stays active, its lock held
    const { job, token, close } = await takeJob(id)
    try {
      await stack.events.Delivery.updateOne({ _id: id }, { $set: { status: 'failed', failedAt: new Date(), attemptCount: 14 } })
      expect(await redrive(app, { deliveryId: id })).toEqual({ queued: 0, reason: NOT_QUEUED.active })
      expect(await state(id)).toBe('active')
      expect(await stack.events.Delivery.findById(id).lean()).toMatchObject({ status: 'failed', run: 1 })
      expect(await stack.redis.exists(redriveClaimKey(stack.redisPrefix, id, 1))).toBe(0)
      // the job leaves active (BullMQ's stall check, or its worker ending it): the redrive goes through
      await job.moveToFailed(new UnrecoverableError('test'), token, false)
      expect(await redrive(app, { deliveryId: id })).toEqual({ queued: 1 })
      expect(await state(id)).toBe('waiting')
      expect(await stack.events.Delivery.findById(id).lean()).toMatchObject({ status: 'pending', run: 2 })
    } finally {
      await close()
    }
  })

  it('pending and held deliveries are already queued: queued 0, no claim taken', async () => {
    const app = newApp()
    const id = await queueTestDelivery(stack, queues, app)
    expect(await redrive(app, { deliveryId: id })).toEqual({ queued: 0, reason: NOT_QUEUED.open })
    await stack.events.Delivery.updateOne({ _id: id }, { $set: { status: 'held' } })
    expect(await redrive(app, { deliveryId: id })).toEqual({ queued: 0, reason: NOT_QUEUED.open })
    expect(await stack.redis.exists(redriveClaimKey(stack.redisPrefix, id, 1))).toBe(0)
  })
})

describe('batch', () => {
  it('batch redrives with a limit take the oldest first; parallel ones queue each delivery once in total', async () => {
    const app = newApp()
    const ids: string[] = []
    // made an hour ago, a second apart (a test delivery near its 30 days' end is not redriven)
    const base = Date.now() - 3_600_000
    for (let i = 0; i < 8; i++) {
      const id = await queueTestDelivery(stack, queues, app)
      await finish(id, 'failed')
      await stack.events.Delivery.collection.updateOne({ _id: id as never }, { $set: { createdAt: new Date(base + i * 1000) } })
      ids.push(id)
    }
    // one call takes the 3 oldest
    expect(await redrive(app, { status: 'failed', limit: 3 })).toEqual({ queued: 3 })
    const pending = (await stack.events.Delivery.find({ _id: { $in: ids }, status: 'pending' }).lean()).map((d) => d._id).sort()
    expect(pending).toEqual(ids.slice(0, 3).sort())
    // parallel calls: each takes up to its limit of what is still failed; every delivery is queued once in total
    const parallel = await Promise.all(Array.from({ length: 5 }, () => redrive(app, { status: 'failed', limit: 2, since: new Date(base).toISOString() })))
    const queued = parallel.reduce((n, r) => n + (r.queued ?? NaN), 0)
    expect(queued).toBeGreaterThanOrEqual(2)
    const now = await stack.events.Delivery.find({ _id: { $in: ids } }).lean()
    expect(now.filter((d) => d.status === 'pending')).toHaveLength(3 + queued)
    expect(now.every((d) => d.run === (d.status === 'pending' ? 2 : 1))).toBe(true)
    const rest = await Promise.all(Array.from({ length: 5 }, () => redrive(app, { status: 'failed' })))
    expect(rest.reduce((n, r) => n + (r.queued ?? NaN), 0)).toBe(5 - queued)
    for (const id of ids) expect(await state(id)).toBe('waiting')
    expect(await stack.events.Delivery.countDocuments({ _id: { $in: ids }, run: 2, status: 'pending' })).toBe(8)
  })

  it("test deliveries within an hour of their retention's end, always refused, take no batch places from newer ones", async () => {
    const app = newApp()
    const failedAt = async (createdAt: Date) => {
      const id = await queueTestDelivery(stack, queues, app)
      await finish(id, 'failed')
      await stack.events.Delivery.collection.updateOne({ _id: id as never }, { $set: { createdAt } })
      return id
    }
    const ending = []
    for (let i = 0; i < 3; i++) ending.push(await failedAt(new Date(Date.now() - 30 * 24 * 3_600_000 + 30 * 60_000 + i * 1000)))
    const recent = await failedAt(new Date(Date.now() - 3_600_000))
    // a since before them does not bring them back
    expect(await redrive(app, { status: 'failed', limit: 3, since: new Date(Date.now() - 31 * 24 * 3_600_000).toISOString() })).toEqual({ queued: 1 })
    expect(await stack.events.Delivery.findById(recent).lean()).toMatchObject({ status: 'pending', run: 2 })
    expect(await stack.events.Delivery.countDocuments({ _id: { $in: ending }, status: 'failed', run: 1 })).toBe(3)
  })
})
