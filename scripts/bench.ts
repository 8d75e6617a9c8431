/**
 * `npm run bench`: throughput and latency baselines, each component in its own process as deployed.
 *
 *   getConfig via the full path   autocannon → XRPC adapter → gateway → apps subgraph → FerretDB
 *   the same lookup, subgraph     autocannon → apps subgraph (signed internal context) → FerretDB
 *   the same lookup, gateway      autocannon → gateway (the adapter's signed context) → apps subgraph → FerretDB
 *   status via the full path      autocannon → XRPC adapter → gateway → payments subgraph → FerretDB
 *   the same lookup, subgraph     autocannon → payments subgraph (signed internal context) → FerretDB
 *   initiate via the full path    autocannon → XRPC adapter → gateway → payments subgraph (its own read: gateway →
 *                                 apps and actors subgraphs) → FerretDB (a new checkout per request)
 *   webhook deliveries            payments outbox → relay → domain-events → workers → HTTP receiver on loopback
 *                                 (deliveries/s, and receipt − occurredAt), on the in-process test stack with the
 *                                 configuration's delivery defaults (scripts/lib/delivery-bench.ts)
 *
 * The lookups run at 50 connections, initiate at 20, all in the same run; then the full-path/subgraph ratios of
 * getConfig and of status. Every full-path request carries its own service-auth JWT (jti replay protection refuses
 * reuse), minted right before its run; every initiate carries its own app order id (a self-sale: the recipient is
 * the app itself, which needs no approval), its product built before the run. The status token polled is of a
 * checkout created by one initiate over XRPC before the runs (pending throughout). Response bodies are checked
 * (a wrong body counts as an error). Results go to stdout and bench-results/latest.json.
 * BENCH_REQUESTS (full-path lookups; default 20000), BENCH_INITIATE_REQUESTS (default: BENCH_REQUESTS, at most 5000),
 * BENCH_SECONDS (direct runs; default 10), BENCH_DELIVERIES (the throughput run's events; default 2000) and
 * BENCH_LATENCY_EVENTS (the one-at-a-time run's; default 200) tune the size. Then the growth rows
 * (scripts/lib/growth-bench.ts): payment.status and the delivery log (whole, and filtered by a common and a rare
 * status), one request at a time, with 1,000, 10,000 and
 * 100,000 documents in their collections (BENCH_GROWTH_SIZES). Then the tickets rows (scripts/lib/tickets-bench.ts):
 * BENCH_CLAIM_BUYERS (default 1000) requests are refused by the XRPC adapter alone at once (the floor of one hop), as
 * many read a 100-seat tier's availability at once (the floor of three hops, no write), then as many buyers hold a paid 100-seat tier at once, then as many claim a free one, through
 * the XRPC API, then as many hold the last 100 seats of a paid tier with BENCH_LARGE_TIER_SOLD (default 30000; 0: not
 * run) seats sold before them (a large tier: its seat map answers which are taken, not the units); each row also prints every process's CPU time per request during its crowd (scripts/lib/cpu-usage.ts), as the
 * status rows do for the full path and the subgraph directly.
 */
import autocannon from 'autocannon'
import Redis from 'ioredis'
import { randomBytes } from 'node:crypto'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { availableParallelism } from 'node:os'
import { connectApps, registerApp } from '@svc/apps'
import { CONTEXT_HEADER, signContext } from '@svc/internal-context'
import { generateDidKeyKeypair, mintServiceJwt, type DidKeyKeypair } from '@svc/service-auth'
import { buildProduct } from '@svc/sdk'
import { ferretDbCommandCounts, startFerretDb, type RunningFerretDb } from '@svc/testing'
import { componentEnv, freeComponentPorts, ROOT, serviceComponents, startComponents } from './lib/components'
import { cpuPerRequest, cpuSnapshot } from './lib/cpu-usage'
import { measureDeliveries, type DeliveryBenchResult, type DeliveryRun } from './lib/delivery-bench'
import { measureGrowth, type GrowthRow } from './lib/growth-bench'
import { measureScarceCrowd, type ScarceCrowdResult } from './lib/tickets-bench'
import { connectTickets, KEPT_UNTIL, seatUnit, unitId } from '@svc/tickets'

const CONNECTIONS = 50
const INITIATE_CONNECTIONS = 20
const FULL_PATH_REQUESTS = Number(process.env.BENCH_REQUESTS ?? 20000)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
/**
 * Initiates (each a new checkout) are several times slower than the lookups: at most 5000 by default, so the run
 * stays well within the JWTs' lifetime (minted before it; an expired one would be a 401, a non-2xx).
 */
const INITIATE_REQUESTS = Number(process.env.BENCH_INITIATE_REQUESTS ?? Math.min(FULL_PATH_REQUESTS, 5000))
const DELIVERIES = Number(process.env.BENCH_DELIVERIES ?? 2000)
const LATENCY_EVENTS = Number(process.env.BENCH_LATENCY_EVENTS ?? 200)
/** the collection sizes of the growth rows */
const CLAIM_BUYERS = Number(process.env.BENCH_CLAIM_BUYERS ?? 1000)
const CLAIM_SEATS = 100
const LARGE_TIER_SOLD = Number(process.env.BENCH_LARGE_TIER_SOLD ?? 30000)
const GROWTH_SIZES = (process.env.BENCH_GROWTH_SIZES ?? '1000,10000,100000').split(',').map(Number).filter((n) => n > 0)
/** The service refuses service JWTs living longer than 300 s; every batch is minted right before its run. */
const JWT_LIFETIME_SECONDS = 290

const CROWD_LABELS = {
  edge: 'reads refused by the adapter alone (EventRequired; the floor of one hop)',
  reads: 'availability reads (the floor of three hops: no write)',
  holds: 'paid holds',
  claims: 'free claims',
} as const
const CROWD_GRANTED = { edge: 'refused as expected', reads: 'answered', holds: 'granted', claims: 'granted' } as const

const GET_CONFIG = 'money.svc.app.getConfig'
const STATUS = 'network.svc.payment.status'
const INITIATE = 'network.svc.payment.initiate'

interface Measured {
  name: string
  /** whether the row goes through the XRPC adapter (must answer only 2xx) */
  fullPath: boolean
  connections: number
  requests: number
  rps: number
  p50: number
  p99: number
  non2xx: number
  /** transport errors, timeouts and responses whose body was not the expected one */
  errors: number
}

interface Ratio {
  throughput: number
  p50: number
  p99: number
}

function summarize(name: string, fullPath: boolean, connections: number, r: autocannon.Result): Measured {
  return {
    name,
    fullPath,
    connections,
    requests: r.requests.total,
    rps: Math.round(r.requests.average),
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts + (r.mismatches ?? 0),
  }
}

/** A delivery run as a row: `connections` is the number of parallel outbox writers, `requests` the events. */
function deliveryRow(name: string, run: DeliveryRun): Measured {
  return {
    name,
    fullPath: false,
    connections: run.writers,
    requests: run.events,
    rps: run.deliveriesPerSecond,
    p50: run.p50,
    p99: run.p99,
    non2xx: 0,
    errors: run.missing + run.errors,
  }
}

function ratioOf(full: Measured, sub: Measured): Ratio {
  return {
    throughput: +(full.rps / Math.max(sub.rps, 1)).toFixed(2),
    p50: +(full.p50 / Math.max(sub.p50, 0.01)).toFixed(2),
    p99: +(full.p99 / Math.max(sub.p99, 0.01)).toFixed(2),
  }
}

async function mintJwts(app: DidKeyKeypair, aud: string, lxm: string, n: number): Promise<string[]> {
  process.stdout.write(`bench: minting ${n} service-auth JWTs for ${lxm}… `)
  const started = Date.now()
  const tokens: string[] = []
  for (let i = 0; i < n; i++) {
    tokens.push(await mintServiceJwt({ keypair: app.keypair, iss: app.did, aud, lxm, expiresInSeconds: JWT_LIFETIME_SECONDS }))
  }
  process.stdout.write(`done (${((Date.now() - started) / 1000).toFixed(1)} s)\n`)
  return tokens
}

/** One request, its status and body text: the sample each run's expected answer is checked against. */
async function sample(url: string, init: RequestInit): Promise<{ status: number; text: string }> {
  const res = await fetch(url, init)
  return { status: res.status, text: await res.text() }
}

async function main() {
  let ferret: RunningFerretDb | undefined
  let mongoBase = process.env.MONGO_URL
  if (!mongoBase) {
    ferret = await startFerretDb({ databasePrefix: 'svc_bench_', announce: true, metrics: true })
    mongoBase = ferret.url
  }
  const backend = ferret ? `FerretDB ${ferret.backend === 'postgresql' ? 'on PostgreSQL' : 'on SQLite'}` : `MONGO_URL (${new URL(mongoBase).host})`
  const mongoUrl = new URL(mongoBase)
  mongoUrl.pathname = `/bench_${randomBytes(3).toString('hex')}`
  const host = '127.0.0.1'
  const ports = await freeComponentPorts()
  const adapterKey = randomBytes(32).toString('hex')
  const adapter = { issuer: 'xrpc-adapter', key: adapterKey } as const
  const serviceDid = 'did:web:svc.bench'
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0'
  const redisPrefix = `svcbench:${randomBytes(3).toString('hex')}:`
  const env = {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    ...componentEnv({ host, ports, mongoUrl: mongoUrl.toString(), redisUrl, redisPrefix, serviceDid }),
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'),
    SERVICE_SIGNING_KEY: randomBytes(32).toString('hex'),
    PAYMENT_TOKEN_SECRET: randomBytes(32).toString('hex'),
    GATEWAY_CONTEXT_KEY: randomBytes(32).toString('hex'),
    ADAPTER_CONTEXT_KEY: adapterKey,
    EVENTS_CONTEXT_KEY: randomBytes(32).toString('hex'),
    PAYMENTS_CONTEXT_KEY: randomBytes(32).toString('hex'),
    APPS_CONTEXT_KEY: randomBytes(32).toString('hex'),
    TICKETS_CONTEXT_KEY: randomBytes(32).toString('hex'),
    OPERATOR_TOKEN: randomBytes(32).toString('hex'),
    METRICS_TOKEN: randomBytes(32).toString('hex'),
    // one app makes every request: the limit is checked on each (its cost is measured) but never reached
    XRPC_RATE_LIMIT_MAX: '1000000000',
  }
  // the request paths need the subgraphs (the gateway composes all four), the gateway and the adapter; the
  // delivery rows run on a stack of their own (below)
  const components = serviceComponents({ host, ports, redisUrl, redisPrefix }, { only: ['apps', 'actors', 'payments', 'events', 'tickets', 'gateway', 'xrpc-adapter'] })
  const running = await startComponents(components, env, { stdio: 'ignore' }).catch(async (err: unknown) => {
    // a component that exited at start (a configuration refused) must not leave the FerretDB running
    await ferret?.stop('SIGKILL')
    throw err
  })
  const { conn, models } = await connectApps(mongoUrl.toString())
  try {
    const app = await generateDidKeyKeypair('ES256K')
    await registerApp({ models }, { did: app.did, environment: 'test', appUrl: 'https://bench.example', feeShareBps: 100 })
    const api = `http://${host}:${ports.api}/xrpc`
    const appContext = () => signContext(adapter, { principal: { kind: 'app', appDid: app.did }, requestId: randomBytes(8).toString('hex') })

    /** A self-sale (recipient = the app), which needs no approval; one app order id per product. */
    const productOf = (appOrderId: string) =>
      buildProduct({
        recipientDid: app.did,
        paymentType: 'shop',
        amount: 1200,
        currency: 'usd',
        appOrderId,
        description: 'Bench poster',
        returnUrl: 'https://bench.example/thanks',
        cancelUrl: 'https://bench.example/cancel',
        environment: 'test',
      })

    // The checkout whose status is polled: one initiate over XRPC, before any run.
    const [seedJwt] = await mintJwts(app, serviceDid, INITIATE, 1)
    const seed = await sample(`${api}/${INITIATE}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${seedJwt}`, 'content-type': 'application/json' },
      body: JSON.stringify({ product: productOf('bench-seed') }),
    })
    if (seed.status !== 200) throw new Error(`bench: the seed initiate answered ${seed.status} ${seed.text}`)
    const statusToken = (JSON.parse(seed.text) as { token: string }).token

    // ---- getConfig ----
    const configTokens = await mintJwts(app, serviceDid, GET_CONFIG, FULL_PATH_REQUESTS)
    const fullPath = await autocannon({
      url: `${api}/${GET_CONFIG}?environment=test`,
      connections: CONNECTIONS,
      amount: configTokens.length,
      requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${configTokens.pop()}` } }) }],
    })

    const query = JSON.stringify({
      query: 'query GetConfig($environment: String!) { appConfig(environment: $environment) { appDid environment appUrl feeShareBps webhook { configured url paused } modules { tickets } ticketing { qrPasses walletPasses } ticketFee { bps flatAmount flatCurrency passToBuyer } } }',
      variables: { environment: 'test' },
    })
    const direct = await autocannon({
      url: `http://${host}:${ports.appsSubgraph}/graphql`,
      connections: CONNECTIONS,
      duration: SECONDS,
      method: 'POST',
      requests: [
        {
          setupRequest: (req) => ({
            ...req,
            body: query,
            headers: { ...req.headers, 'content-type': 'application/json', [CONTEXT_HEADER]: appContext() },
          }),
        },
      ],
    })

    // The middle hop on its own: the same operation sent to the gateway as the adapter sends it.
    const viaGateway = await autocannon({
      url: `http://${host}:${ports.gateway}/graphql`,
      connections: CONNECTIONS,
      duration: SECONDS,
      method: 'POST',
      body: query,
      headers: {
        'content-type': 'application/json',
        // one context for the run (it lives 60 s), as the adapter signs one per request
        [CONTEXT_HEADER]: appContext(),
      },
    })

    // ---- payment status: the seeded checkout, pending throughout ----
    const statusUrl = `${api}/${STATUS}?token=${encodeURIComponent(statusToken)}`
    const [probeJwt] = await mintJwts(app, serviceDid, STATUS, 1)
    const statusAnswer = await sample(statusUrl, { headers: { authorization: `Bearer ${probeJwt}` } })
    if (statusAnswer.status !== 200 || (JSON.parse(statusAnswer.text) as { status?: string }).status !== 'pending') {
      throw new Error(`bench: status answered ${statusAnswer.status} ${statusAnswer.text}`)
    }
    const statusTokens = await mintJwts(app, serviceDid, STATUS, FULL_PATH_REQUESTS)
    const statusFullCpu = cpuSnapshot()
    const statusFull = await autocannon({
      url: statusUrl,
      connections: CONNECTIONS,
      amount: statusTokens.length,
      verifyBody: (body) => String(body ?? '') === statusAnswer.text,
      requests: [{ setupRequest: (req) => ({ ...req, headers: { ...req.headers, authorization: `Bearer ${statusTokens.pop()}` } }) }],
    })

    const statusFullCpuPerRequest = cpuPerRequest(statusFullCpu, cpuSnapshot(), statusFull.requests.total)

    const statusQuery = JSON.stringify({
      query: 'query($token:String!){ paymentStatus(token:$token){ status ref { uri cid } } }',
      variables: { token: statusToken },
    })
    const paymentsUrl = `http://${host}:${ports.paymentsSubgraph}/graphql`
    const subgraphAnswer = await sample(paymentsUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', [CONTEXT_HEADER]: appContext() },
      body: statusQuery,
    })
    const subgraphData = JSON.parse(subgraphAnswer.text) as { data?: { paymentStatus?: { status?: string } }; errors?: unknown }
    if (subgraphAnswer.status !== 200 || subgraphData.errors || subgraphData.data?.paymentStatus?.status !== 'pending') {
      throw new Error(`bench: the payments subgraph answered ${subgraphAnswer.status} ${subgraphAnswer.text}`)
    }
    const statusDirectCpu = cpuSnapshot()
    const statusDirect = await autocannon({
      url: paymentsUrl,
      connections: CONNECTIONS,
      duration: SECONDS,
      method: 'POST',
      verifyBody: (body) => String(body ?? '') === subgraphAnswer.text,
      requests: [
        {
          setupRequest: (req) => ({
            ...req,
            body: statusQuery,
            headers: { ...req.headers, 'content-type': 'application/json', [CONTEXT_HEADER]: appContext() },
          }),
        },
      ],
    })

    const statusDirectCpuPerRequest = cpuPerRequest(statusDirectCpu, cpuSnapshot(), statusDirect.requests.total)

    // ---- initiate: a new checkout per request ----
    const runId = randomBytes(3).toString('hex')
    const initiateBodies = Array.from({ length: INITIATE_REQUESTS }, (_, i) => JSON.stringify({ product: productOf(`bench-${runId}-${i}`) }))
    const initiateTokens = await mintJwts(app, serviceDid, INITIATE, INITIATE_REQUESTS)
    const INITIATED = /^\{"token":"pst_test_[A-Za-z0-9_-]{43}","url":"http:\/\/[^"]+\/checkout\/cko_test_[A-Za-z0-9_-]{43}"\}$/
    let nextInitiate = 0
    const initiateFull = await autocannon({
      url: `${api}/${INITIATE}`,
      connections: INITIATE_CONNECTIONS,
      amount: initiateBodies.length,
      method: 'POST',
      verifyBody: (body) => INITIATED.test(String(body ?? '')),
      requests: [
        {
          setupRequest: (req) => {
            const i = nextInitiate++
            return {
              ...req,
              body: initiateBodies[i],
              headers: { ...req.headers, 'content-type': 'application/json', authorization: `Bearer ${initiateTokens[i]}` },
            }
          },
        },
      ],
    })
    // one checkout per app order id: every 2xx created its own
    const created = await conn.collection('checkouts').countDocuments({ appDid: app.did, appOrderId: { $regex: `^bench-${runId}-` } })

    // ---- tickets: a crowd refused by the adapter alone and a crowd reading a tier's availability (the floors of the
    // next two, one hop and three), then a crowd of buyers
    // holds a scarce paid tier at once, then another claims a scarce free one ----
    const crowds: ScarceCrowdResult[] = []
    const tickets = await connectTickets(mongoUrl.toString())
    try {
      const ticketsApp = await generateDidKeyKeypair('ES256K')
      await registerApp({ models }, { did: ticketsApp.did, environment: 'test', appUrl: 'https://bench.example', feeShareBps: 100 })
      // seats sold before a crowd: kept units, as a paid hold's tickets leave them
      const sell = async (tierId: string, seats: number) => {
        const reservationId = `bench_sold_${tierId}`
        for (let from = 0; from < seats; from += 1000) {
          const docs = Array.from({ length: Math.min(1000, seats - from) }, (_, i) => {
            const unit = seatUnit(tierId, from + i)
            return { _id: unitId(reservationId, unit), unit, kind: 'seat', tierId, reservationId, buyerDid: null, ticketId: null, orderKey: null, expiresAt: KEPT_UNTIL, createdAt: new Date() }
          })
          await tickets.models.CapacityUnit.collection.insertMany(docs as never[])
        }
      }
      const runs = [...(['edge', 'reads', 'holds', 'claims'] as const).map((crowd) => ({ crowd, sold: 0 })), ...(LARGE_TIER_SOLD > 0 ? [{ crowd: 'holds' as const, sold: LARGE_TIER_SOLD }] : [])]
      for (const { crowd, sold } of runs) {
        process.stdout.write(`bench: ${CLAIM_BUYERS} concurrent ${crowd} on ${CLAIM_SEATS} seats${sold ? ` (${sold} sold before)` : ''}… `)
        const result = await measureScarceCrowd({
          crowd,
          api,
          serviceDid,
          app: ticketsApp,
          buyers: CLAIM_BUYERS,
          capacity: CLAIM_SEATS,
          countSeats: (tierId) => tickets.models.CapacityUnit.countDocuments({ tierId, kind: 'seat' }),
          sold: sold ? { seats: sold, sell } : undefined,
        })
        crowds.push(result)
        process.stdout.write(`done (${result.seconds} s)\n`)
        if (result.granted !== (crowd === 'reads' || crowd === 'edge' ? CLAIM_BUYERS : CLAIM_SEATS) || result.unexpected) process.exitCode = 1
      }
    } catch (err) {
      console.error('bench: the tickets rows failed:', err)
      process.exitCode = 1
    } finally {
      await tickets.conn.close()
    }

    // ---- webhook deliveries: outbox → relay → workers → receiver ----
    let deliveries: DeliveryBenchResult | null = null
    const metricsUrl = ferret?.metricsUrl
    try {
      deliveries = await measureDeliveries({
        mongoUrl: mongoBase,
        redisUrl,
        events: DELIVERIES,
        latencyEvents: LATENCY_EVENTS,
        log: (line) => process.stdout.write(line),
        commandCounts: metricsUrl ? () => ferretDbCommandCounts(metricsUrl) : undefined,
      })
    } catch (err) {
      console.error('bench: the delivery rows failed:', err)
      process.exitCode = 1
    }

    // ---- growth: status and the delivery log as their collections grow ----
    let growth: GrowthRow[] | null = null
    try {
      growth = await measureGrowth({ mongoUrl: mongoBase, redisUrl, sizes: GROWTH_SIZES, log: (line) => process.stdout.write(line) })
    } catch (err) {
      console.error('bench: the growth rows failed:', err)
      process.exitCode = 1
    }

    const rows = [
      summarize('getConfig, full path (adapter → gateway → subgraph → FerretDB)', true, CONNECTIONS, fullPath),
      summarize('appConfig, apps subgraph directly', false, CONNECTIONS, direct),
      summarize('appConfig, gateway directly (→ subgraph → FerretDB; no JWT, no lexicon)', false, CONNECTIONS, viaGateway),
      summarize('payment.status, full path (adapter → gateway → payments subgraph → FerretDB)', true, CONNECTIONS, statusFull),
      summarize('paymentStatus, payments subgraph directly', false, CONNECTIONS, statusDirect),
      summarize('payment.initiate, full path (adapter → gateway → payments subgraph, which reads apps and actors through the gateway → FerretDB)', true, INITIATE_CONNECTIONS, initiateFull),
    ]
    const deliveryRows = deliveries
      ? [
          deliveryRow('webhook deliveries/s, payments outbox → relay → workers → HTTP receiver (loopback); p50/p99 = receipt − occurredAt', deliveries.throughput),
          deliveryRow('added latency, state change → webhook receipt, one event at a time (req/s = sequential events/s)', deliveries.latency),
        ]
      : []
    const [configFull, configSub, , statusFullRow, statusSubRow, initiateRow] = rows as [Measured, Measured, Measured, Measured, Measured, Measured]
    console.log(`\n${new Date().toISOString()}, database: ${backend}`)
    console.log('| path | connections | requests | req/s | p50 ms | p99 ms | non-2xx | errors |')
    console.log('|---|---|---|---|---|---|---|---|')
    for (const r of [...rows, ...deliveryRows]) console.log(`| ${r.name} | ${r.connections} | ${r.requests} | ${r.rps} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} |`)
    const ratio = ratioOf(configFull, configSub)
    const statusRatio = ratioOf(statusFullRow, statusSubRow)
    console.log(`\ngetConfig full path / subgraph: throughput ${ratio.throughput}x, p50 latency ${ratio.p50}x, p99 latency ${ratio.p99}x`)
    console.log(`status    full path / subgraph: throughput ${statusRatio.throughput}x, p50 latency ${statusRatio.p50}x, p99 latency ${statusRatio.p99}x`)
    // where a status lookup's CPU goes, on each path: two saturated cores answer about 2,000 / (ms per request) a second
    for (const [path, cpu] of [['full path', statusFullCpuPerRequest], ['subgraph directly', statusDirectCpuPerRequest]] as const) {
      if (!cpu.length) continue
      const total = cpu.reduce((sum, r) => sum + r.ms, 0)
      console.log(`status CPU per request, ${path}: ${total.toFixed(2)} ms in all (${cpu.map((r) => `${r.label} ${r.ms}`).join(', ')}) on ${availableParallelism()} cores`)
    }
    console.log(`initiate: ${created} checkouts stored for ${initiateRow.requests} requests`)
    if (growth) {
      console.log('\n| documents in the collection | payment.status p50 / p99 ms | delivery log (20 newest of the app\'s 1%) p50 / p99 ms | status=delivered | status=failed (2%) |')
      console.log('|---|---|---|---|---|')
      const pair = (m: { p50: number; p99: number }) => `${m.p50} / ${m.p99}`
      for (const g of growth) console.log(`| ${g.documents} | ${pair(g.status)} | ${pair(g.deliveryLog)} | ${pair(g.delivered)} | ${pair(g.failed)} |`)
    }
    for (const c of crowds) {
      console.log(
        `\ntickets: ${c.buyers} concurrent ${CROWD_LABELS[c.crowd]} on ${c.capacity} seats${c.sold ? ` left of ${c.capacity + c.sold} (${c.sold} sold)` : ''} (full path): ${c.granted} ${CROWD_GRANTED[c.crowd]}, ` +
          `${c.unexpected} unexpected answers, p50 ${c.p50} ms, p99 ${c.p99} ms, all answered in ${c.seconds} s`,
      )
      if (c.cpu.length) {
        const total = c.cpu.reduce((sum, r) => sum + r.ms, 0)
        console.log(`  CPU per request: ${total.toFixed(1)} ms in all (${c.cpu.map((r) => `${r.label} ${r.ms}`).join(', ')}) on ${availableParallelism()} cores`)
      }
    }
    if (deliveries) {
      const { throughput, latency, delivery } = deliveries
      console.log(
        `deliveries: ${throughput.events - throughput.missing}/${throughput.events} delivered in ${throughput.seconds} s (${throughput.deliveriesPerSecond}/s, ` +
          `worker concurrency ${delivery.concurrency}, ${throughput.duplicates + latency.duplicates} repeats); one at a time: p50 ${latency.p50} ms, p99 ${latency.p99} ms from state change to receipt`,
      )
      const describe = (c: { total: number; byCommand: Record<string, number> }) =>
        `${c.total} (${Object.entries(c.byCommand).sort(([, a], [, b]) => b - a).map(([k, v]) => `${k} ${v}`).join(', ')})`
      if (deliveries.cpu.length) {
        const total = deliveries.cpu.reduce((sum, r) => sum + r.ms, 0)
        console.log(`CPU per delivery under load: ${total.toFixed(1)} ms in all (${deliveries.cpu.map((r) => `${r.label} ${r.ms}`).join(', ')}; the bench process runs the stack)`)
      }
      if (deliveries.commands) {
        console.log(`database commands per delivery, the outbox insert included: ${describe(deliveries.commands.throughput)} under load; ${describe(deliveries.commands.latency)} one at a time`)
      } else console.log('database commands per delivery: not counted (MONGO_URL: only the FerretDB the bench starts is counted)')
      for (const run of [throughput, latency]) {
        if (run.missing || run.errors) {
          console.error(`bench: deliveries: ${run.missing} of ${run.events} not received, ${run.errors} without an id, a signature or an envelope`)
          process.exitCode = 1
        }
      }
    }
    mkdirSync(join(ROOT, 'bench-results'), { recursive: true })
    writeFileSync(
      join(ROOT, 'bench-results', 'latest.json'),
      JSON.stringify({ at: new Date().toISOString(), backend, connections: CONNECTIONS, initiateConnections: INITIATE_CONNECTIONS, rows: [...rows, ...deliveryRows], ratio, statusRatio, deliveries, growth, tickets: crowds }, null, 2),
    )
    const failing = rows.filter((r) => r.fullPath && (r.non2xx || r.errors))
    if (!initiateRow.non2xx && !initiateRow.errors && created !== initiateRow.requests) {
      console.error(`bench: initiate stored ${created} checkouts for ${initiateRow.requests} requests`)
      process.exitCode = 1
    }
    for (const r of rows.filter((r) => !r.fullPath && (r.non2xx || r.errors))) console.error(`bench: ${r.name} answered ${r.non2xx} non-2xx, ${r.errors} errors`)
    if (failing.length) {
      console.error(`bench: the full path answered errors (${failing.map((r) => r.name).join('; ')}); the numbers are not a baseline`)
      process.exitCode = 1
    }
  } finally {
    await conn.dropDatabase().catch(() => undefined)
    await conn.close()
    await running.stop()
    // the run's Redis keys (queues' metadata, replay-protection keys) under its own prefix
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
    const keys = await redis.keys(`${redisPrefix}*`).catch(() => [])
    if (keys.length) await redis.del(...keys).catch(() => undefined)
    redis.disconnect()
    await ferret?.stop('SIGKILL')
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
