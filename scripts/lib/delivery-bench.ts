/**
 * The benchmark's event-delivery measurements, on the in-process test stack (packages/testing: the payments
 * subgraph with its outbox relay, the events workers) and a local HTTP receiver on loopback:
 *
 *   throughput  N outbox events written into the payments outbox (by `writers` parallel writers) → relay →
 *               `domain-events` → worker → delivery → `webhook-deliveries` → worker → HTTP POST → receiver;
 *               deliveries per second until the receiver has all N
 *   latency     one event at a time, each written when the previous one arrived: receipt time − occurredAt
 *
 * Both report receipt − occurredAt percentiles; every delivery is checked (its id is the one derived from its
 * event, it carries a Standard Webhooks signature); repeats are counted (delivery is at least once).
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import { loadConfig, type DeliverySettings } from '@svc/config'
import { deliveryIdForEvent, ensureSigningSecret } from '@svc/events'
import { outboxEventId, writeOutboxEvent } from '@svc/outbox'
import { startStack, type TestStack } from '@svc/e2e'
import { cpuPerRequest, cpuSnapshot } from './cpu-usage'

export interface DeliveryRun {
  events: number
  /** parallel writers of the outbox events */
  writers: number
  seconds: number
  deliveriesPerSecond: number
  /** receipt − occurredAt, ms */
  p50: number
  p99: number
  /** events not received before the deadline */
  missing: number
  /** deliveries received again (delivery is at least once: a retry after a lost answer or a stalled job) */
  duplicates: number
  /** deliveries without a webhook id, a signature or a readable envelope */
  errors: number
}

/** The database commands of a run, per delivery, counted by the database server (FerretDB's metrics). */
export interface CommandsPerDelivery {
  /** every data command of the run divided by its deliveries, the outbox event's insert included */
  total: number
  byCommand: Record<string, number>
}

export interface DeliveryBenchResult {
  throughput: DeliveryRun
  latency: DeliveryRun
  /** null when the database's commands cannot be counted (MONGO_URL) */
  commands: { throughput: CommandsPerDelivery; latency: CommandsPerDelivery } | null
  /** CPU milliseconds per delivery of each process during the throughput run (Linux; cpu-usage.ts), largest first */
  cpu: { label: string; ms: number }[]
  /** the delivery settings the workers ran with */
  delivery: DeliverySettings
}

/** A receiver that records the first arrival of every delivery id and answers 200. */
async function startReceiver() {
  const arrivals = new Map<string, { at: number; createdAt: number }>()
  const waiters = new Map<string, () => void>()
  let errors = 0
  let duplicates = 0
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const at = Date.now()
      const id = req.headers['webhook-id']
      const signed = /^v1,/.test(String(req.headers['webhook-signature'] ?? ''))
      let createdAt = NaN
      try {
        createdAt = Date.parse((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { createdAt: string }).createdAt)
      } catch {
        // counted below
      }
      if (typeof id !== 'string' || !signed || Number.isNaN(createdAt)) errors++
      else if (arrivals.has(id)) duplicates++
      else {
        arrivals.set(id, { at, createdAt })
        waiters.get(id)?.()
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`,
    arrivals,
    counts: () => ({ errors, duplicates }),
    /** resolves when the delivery arrives (at once if it has), or false after timeoutMs */
    arrival(id: string, timeoutMs: number): Promise<boolean> {
      if (arrivals.has(id)) return Promise.resolve(true)
      return new Promise((resolve) => {
        const timer = setTimeout(() => (waiters.delete(id), resolve(false)), timeoutMs)
        waiters.set(id, () => (clearTimeout(timer), waiters.delete(id), resolve(true)))
      })
    },
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  }
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN
}

function summarize(receiver: Receiver, deliveryIds: string[], writers: number, startedAt: number, before: { errors: number; duplicates: number }): DeliveryRun {
  const latencies: number[] = []
  let last = startedAt
  for (const id of deliveryIds) {
    const a = receiver.arrivals.get(id)
    if (!a) continue
    latencies.push(a.at - a.createdAt)
    last = Math.max(last, a.at)
  }
  latencies.sort((a, b) => a - b)
  const seconds = (last - startedAt) / 1000
  return {
    events: deliveryIds.length,
    writers,
    seconds: +seconds.toFixed(2),
    deliveriesPerSecond: Math.round(latencies.length / Math.max(seconds, 0.001)),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    missing: deliveryIds.length - latencies.length,
    duplicates: receiver.counts().duplicates - before.duplicates,
    errors: receiver.counts().errors - before.errors,
  }
}

const event = (stack: TestStack, appDid: string, key: string, occurredAt?: Date) =>
  writeOutboxEvent(stack.payments.Outbox, {
    type: 'payment.completed',
    environment: 'test',
    appDid,
    key,
    occurredAt,
    data: {
      paymentUri: `at://${stack.serviceDid}/money.svc.payment.record/${key.replace(/[^a-z0-9]/gi, '')}`,
      cid: 'bafyreibench',
      appOrderId: key,
      recipientDid: appDid,
      paymentType: 'shop',
      amount: 1200,
      currency: 'usd',
      buyerFee: 0,
      total: 1200,
      completedAt: (occurredAt ?? new Date()).toISOString(),
    },
  })

/**
 * Runs both measurements on a stack of their own. `mongoUrl` and `redisUrl` are the servers the stack isolates its
 * database and key prefix on (the stack's isolation reads them as the jest global setup sets them).
 */
function perDelivery(before: Record<string, number>, after: Record<string, number>, deliveries: number): CommandsPerDelivery {
  const byCommand: Record<string, number> = {}
  let total = 0
  for (const [command, n] of Object.entries(after)) {
    const diff = n - (before[command] ?? 0)
    if (diff <= 0) continue
    byCommand[command] = +(diff / deliveries).toFixed(2)
    total += diff
  }
  return { total: +(total / deliveries).toFixed(2), byCommand }
}

export async function measureDeliveries(opts: {
  mongoUrl: string
  redisUrl: string
  events: number
  latencyEvents: number
  writers?: number
  log?: (line: string) => void
  /** the database server's command counts so far (FerretDB's metrics), to count commands per delivery */
  commandCounts?: () => Promise<Record<string, number>>
}): Promise<DeliveryBenchResult> {
  const counted = opts.commandCounts ?? (async () => null)
  // the writes that follow an arrival (the attempt's outcome, the relay's marks within 250 ms) are counted too
  const settled = () => new Promise((r) => setTimeout(r, 1000))
  const log = opts.log ?? (() => undefined)
  const writers = opts.writers ?? 50
  process.env.SVC_TEST_MONGO_URL = opts.mongoUrl
  process.env.SVC_TEST_REDIS_URL = opts.redisUrl
  // what a deployment runs (the configuration's defaults: real-time schedule, 30 s locks, 20 parallel deliveries)
  const delivery = loadConfig({}).delivery
  const stack = await startStack('bench_deliveries', { allowLoopbackWebhooks: true, delivery })
  const receiver = await startReceiver()
  try {
    const app = await stack.newApp()
    const configured = await stack.models.AppEnvironment.collection.updateOne(
      { appDid: app.did, environment: 'test' },
      { $set: { webhook: { url: receiver.url, paused: false, channel: 'webhook', receiverUrl: null } } },
    )
    if (configured.matchedCount !== 1) throw new Error('bench: the app configuration was not found')
    await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app.did, 'test')
    const runId = randomBytes(3).toString('hex')
    const deliveryIdOf = (key: string) => deliveryIdForEvent(outboxEventId(key))

    // warm-up: the first delivery opens the connections and compiles the paths
    const warm = `bench:${runId}:warm`
    await event(stack, app.did, warm)
    if (!(await receiver.arrival(deliveryIdOf(warm), 30_000))) throw new Error('bench: the warm-up event was not delivered within 30 s')

    // ---- throughput ----
    log(`bench: writing ${opts.events} outbox events (${writers} writers) and waiting for their deliveries… `)
    const keys = Array.from({ length: opts.events }, (_, i) => `bench:${runId}:t:${i}`)
    let before = receiver.counts()
    let commandsBefore = await counted()
    const cpuBefore = cpuSnapshot()
    const started = Date.now()
    let next = 0
    await Promise.all(
      Array.from({ length: writers }, async () => {
        while (next < keys.length) await event(stack, app.did, keys[next++] as string)
      }),
    )
    const ids = keys.map(deliveryIdOf)
    // generous: on FerretDB (SQLite) every stage is bound by its writes
    const deadline = Date.now() + Math.max(120_000, opts.events * 200)
    for (const id of ids) await receiver.arrival(id, Math.max(0, deadline - Date.now()))
    const throughput = summarize(receiver, ids, writers, started, before)
    const cpu = cpuPerRequest(cpuBefore, cpuSnapshot(), opts.events)
    await settled()
    let commandsAfter = await counted()
    const throughputCommands = commandsBefore && commandsAfter ? perDelivery(commandsBefore, commandsAfter, opts.events) : null
    log(`done (${throughput.seconds} s)\n`)

    // ---- latency: one at a time ----
    log(`bench: ${opts.latencyEvents} events one at a time… `)
    before = receiver.counts()
    commandsBefore = await counted()
    const latencyKeys = Array.from({ length: opts.latencyEvents }, (_, i) => `bench:${runId}:l:${i}`)
    const latencyStarted = Date.now()
    for (const key of latencyKeys) {
      await event(stack, app.did, key, new Date())
      await receiver.arrival(deliveryIdOf(key), 10_000)
    }
    const latency = summarize(receiver, latencyKeys.map(deliveryIdOf), 1, latencyStarted, before)
    await settled()
    commandsAfter = await counted()
    const latencyCommands = commandsBefore && commandsAfter ? perDelivery(commandsBefore, commandsAfter, opts.latencyEvents) : null
    log(`done (${latency.seconds} s)\n`)
    const commands = throughputCommands && latencyCommands ? { throughput: throughputCommands, latency: latencyCommands } : null
    return { throughput, latency, commands, delivery, cpu }
  } finally {
    await receiver.close()
    await stack.stop()
  }
}
