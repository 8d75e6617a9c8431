/**
 * The bench's growth rows: how the two most read lookups cost as their collections grow, through the real HTTP stack
 * (the in-process test stack, like the delivery rows):
 *
 *   payment.status     GET {api}/xrpc/network.svc.payment.status?token=…   one checkout among N in `checkouts`
 *   delivery log       GET {checkout}/api/webhooks/atm?app=…&limit=20       one app's newest 20 among N in `deliveries`
 *   … by status        the same with &status=delivered (most of them) and &status=failed (2% of the app's)
 *
 * at N = 1,000, 10,000 and 100,000 (GROWTH_SIZES). The checkouts are copies of one real checkout (new id, hashes and
 * order id), spread over 100 apps; the deliveries are spread over 100 apps as well, so the measured app holds 1% of
 * the collection, each numbered and paged as createDelivery numbers them (its app environment's delivery log). Requests run one at a time (the cost of one lookup, not the service's concurrency).
 */
import { createHash, randomBytes } from 'node:crypto'
import { buildProduct } from '@svc/sdk'
import { logCounterKey, logPageKey, logPageNumber, newDeliveryId, serializeEnvelope } from '@svc/events'
import { startStack, type TestStack } from '@svc/e2e'

export interface GrowthRow {
  documents: number
  status: { p50: number; p99: number }
  deliveryLog: { p50: number; p99: number }
  /** the log filtered by a common status (read from its pages) and by a rare one (the full query, its status index) */
  delivered: { p50: number; p99: number }
  failed: { p50: number; p99: number }
}

const REQUESTS = 200
const APPS = 100

function percentiles(samples: number[]): { p50: number; p99: number } {
  const sorted = [...samples].sort((a, b) => a - b)
  const at = (p: number) => +(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN).toFixed(1)
  return { p50: at(50), p99: at(99) }
}

async function timed(requests: (() => Promise<Response>)[]): Promise<{ p50: number; p99: number }> {
  const samples: number[] = []
  for (const send of requests) {
    const started = performance.now()
    const res = await send()
    await res.arrayBuffer()
    if (res.status !== 200) throw new Error(`bench: growth request answered ${res.status}`)
    samples.push(performance.now() - started)
  }
  return percentiles(samples)
}

const hex = () => randomBytes(16).toString('hex')
const filler = (i: number) => `did:plc:growth${String(i % APPS).padStart(3, '0')}`

async function seedCheckouts(stack: TestStack, template: Record<string, unknown>, count: number): Promise<void> {
  const collection = stack.payments.Checkout.collection
  for (let done = 0; done < count; ) {
    const batch = Array.from({ length: Math.min(2000, count - done) }, (_, i) => ({
      ...template,
      _id: `chk_${hex()}`,
      appDid: filler(done + i),
      appOrderId: `growth-${hex()}`,
      statusTokenHash: createHash('sha256').update(hex()).digest('hex'),
      browserTokenHash: createHash('sha256').update(hex()).digest('hex'),
    }))
    await collection.insertMany(batch as never[], { ordered: false })
    done += batch.length
  }
}

/** Each seeded app's last delivery-log number, as createDelivery would have counted them. */
const logNumbers = new Map<string, number>()

async function seedDeliveries(stack: TestStack, appDid: string, count: number): Promise<void> {
  const collection = stack.events.Delivery.collection
  for (let done = 0; done < count; ) {
    const batch = Array.from({ length: Math.min(2000, count - done) }, (_, i) => {
      const n = done + i
      const id = newDeliveryId()
      const createdAt = new Date()
      const owner = n % APPS === 0 ? appDid : filler(n)
      const logSeq = (logNumbers.get(owner) ?? 0) + 1
      logNumbers.set(owner, logSeq)
      return {
        _id: id,
        appDid: owner,
        environment: 'test',
        eventId: null,
        eventType: 'app.webhook.test',
        source: 'test',
        body: serializeEnvelope({ id, type: 'app.webhook.test', createdAt: createdAt.toISOString(), apiVersion: '2026-06', environment: 'test', data: { n } }),
        // one in 50 of the measured app's deliveries failed (one in 5,000 of the collection)
        status: n % (APPS * 50) === 0 ? 'failed' : 'delivered',
        attemptCount: 1,
        run: 1,
        deliveredAt: createdAt,
        createdAt,
        updatedAt: createdAt,
        logSeq,
        logPage: logPageKey('test', owner, logPageNumber(logSeq)),
      }
    })
    await collection.insertMany(batch as never[], { ordered: false })
    done += batch.length
  }
  for (const [owner, last] of logNumbers) await stack.redis.set(logCounterKey(stack.redisPrefix, owner, 'test'), last)
}

export async function measureGrowth(opts: { mongoUrl: string; redisUrl: string; sizes: number[]; log?: (line: string) => void }): Promise<GrowthRow[]> {
  const log = opts.log ?? (() => undefined)
  process.env.SVC_TEST_MONGO_URL = opts.mongoUrl
  process.env.SVC_TEST_REDIS_URL = opts.redisUrl
  const stack = await startStack('bench_growth', { workers: false })
  try {
    const app = await stack.newApp()
    const apiKey = await app.apiKey('test', ['webhook.deliveries.read'])
    const product = buildProduct({
      recipientDid: app.did,
      paymentType: 'shop',
      amount: 500,
      currency: 'usd',
      appOrderId: `growth-${hex()}`,
      description: 'growth bench',
      returnUrl: 'https://app.example.com/thanks',
      cancelUrl: 'https://app.example.com/cancel',
    })
    const initiated = await fetch(`${stack.apiUrl}/xrpc/network.svc.payment.initiate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await app.jwt('network.svc.payment.initiate')}` },
      body: JSON.stringify({ product }),
    })
    if (initiated.status !== 200) throw new Error(`bench: initiate answered ${initiated.status}`)
    const { token } = (await initiated.json()) as { token: string }
    const template = (await stack.payments.Checkout.findOne({ appDid: app.did }).lean()) as Record<string, unknown> | null
    if (!template) throw new Error('bench: the initiated checkout is not stored')
    const logUrl = `${stack.checkoutUrl}/api/webhooks/atm?app=${encodeURIComponent(app.did)}&limit=20`

    const rows: GrowthRow[] = []
    let checkouts = 1
    let deliveries = 0
    for (const size of opts.sizes) {
      log(`bench: growth: ${size} checkouts and deliveries… `)
      await seedCheckouts(stack, template, size - checkouts)
      checkouts = size
      await seedDeliveries(stack, app.did, size - deliveries)
      deliveries = size
      const jwts = await Promise.all(Array.from({ length: REQUESTS + 5 }, () => app.jwt('network.svc.payment.status')))
      const status = (jwt: string) => () => fetch(`${stack.apiUrl}/xrpc/network.svc.payment.status?token=${token}`, { headers: { authorization: `Bearer ${jwt}` } })
      const deliveryLog = () => fetch(logUrl, { headers: { authorization: `Bearer ${apiKey}` } })
      await timed(jwts.slice(0, 5).map(status)) // warm
      const ofStatus = (s: string) => () => fetch(`${logUrl}&status=${s}`, { headers: { authorization: `Bearer ${apiKey}` } })
      const row = {
        documents: size,
        status: await timed(jwts.slice(5).map(status)),
        deliveryLog: await timed(Array.from({ length: REQUESTS }, () => deliveryLog)),
        delivered: await timed(Array.from({ length: REQUESTS }, () => ofStatus('delivered'))),
        failed: await timed(Array.from({ length: REQUESTS }, () => ofStatus('failed'))),
      }
      rows.push(row)
      log(`status p50 ${row.status.p50} ms, delivery log p50 ${row.deliveryLog.p50} ms (delivered ${row.delivered.p50}, failed ${row.failed.p50})\n`)
    }
    return rows
  } finally {
    await stack.stop()
  }
}
