/**
 * `npm run soak`: SOAK_MINUTES (15) of mixed load at about a third of the bench's peak, every component in its own process
 * as deployed (the subgraphs, the gateway, the adapter, the events workers; FerretDB and Redis), sampling every
 * process's memory each SOAK_SAMPLE_SECONDS (30) from its own /metrics (process_resident_memory_bytes,
 * nodejs_heap_size_used_bytes). Flat is the goal.
 *
 * The load, SOAK_RATE requests per second in all (default 180, about a third of payment.status's full-path peak on this
 * machine): 75% network.svc.payment.status, 10% getConfig, 5% payment.initiate (a new checkout each), 10% test events
 * through the utility route (each a delivery to a webhook receiver on loopback). Every answer is checked; errors and
 * deliveries not received are counted. Prints one line per sample, then each process's first and last sample and
 * the heap's slope. With HEAP_SNAPSHOT_DIR, every process writes a heap snapshot there once warm and at the end, and
 * the live heap each one holds after a full collection is printed (docs/performance.md).
 */
import { randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { connectApps, issueApiKey, registerApp } from '@svc/apps'
import { buildProduct } from '@svc/sdk'
import { generateDidKeyKeypair, mintServiceJwt } from '@svc/service-auth'
import { startFerretDb, type RunningFerretDb } from '@svc/testing'
import { join } from 'node:path'
import { componentEnv, freeComponentPorts, heapSnapshot, serviceComponents, startComponents, type ComponentName } from './lib/components'

const MINUTES = Number(process.env.SOAK_MINUTES ?? 15)
const SAMPLE_SECONDS = Number(process.env.SOAK_SAMPLE_SECONDS ?? 30)
const RATE = Number(process.env.SOAK_RATE ?? 180)
/** with it, every process writes a heap snapshot there once warm and once at the end (components.ts, heapSnapshot) */
const HEAP_SNAPSHOT_DIR = process.env.HEAP_SNAPSHOT_DIR

const GET_CONFIG = 'money.svc.app.getConfig'
const UPDATE_CONFIG = 'money.svc.app.updateConfig'
const STATUS = 'network.svc.payment.status'
const INITIATE = 'network.svc.payment.initiate'

interface Sample {
  atSeconds: number
  /** process → MB */
  rss: Record<string, number>
  heap: Record<string, number>
}

function metricValue(text: string, name: string): number | null {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `))
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : null
}

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length
  const mx = xs.reduce((a, b) => a + b, 0) / n
  const my = ys.reduce((a, b) => a + b, 0) / n
  const num = xs.reduce((a, x, i) => a + (x - mx) * (ys[i]! - my), 0)
  const den = xs.reduce((a, x) => a + (x - mx) ** 2, 0)
  return den === 0 ? 0 : num / den
}

async function main() {
  let ferret: RunningFerretDb | undefined
  let mongoBase = process.env.MONGO_URL
  if (!mongoBase) {
    ferret = await startFerretDb({ databasePrefix: 'svc_soak_', announce: true })
    mongoBase = ferret.url
  }
  const mongoUrl = new URL(mongoBase)
  mongoUrl.pathname = `/soak_${randomBytes(3).toString('hex')}`
  const host = '127.0.0.1'
  const ports = await freeComponentPorts()
  const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379/0'
  const redisPrefix = `svcsoak:${randomBytes(3).toString('hex')}:`
  const serviceDid = 'did:web:svc.soak'
  const metricsToken = randomBytes(32).toString('hex')
  const env: Record<string, string> = {
    NODE_ENV: 'development',
    LOG_LEVEL: 'warn',
    ...componentEnv({ host, ports, mongoUrl: mongoUrl.toString(), redisUrl, redisPrefix, serviceDid }),
    METRICS_TOKEN: metricsToken,
    DEV_ALLOW_LOOPBACK_WEBHOOKS: 'true',
    // one app makes every request: its limits are checked but never reached
    XRPC_RATE_LIMIT_MAX: '1000000000',
    UTILITY_RATE_LIMIT_MAX: '1000000000',
  }
  const processes = {
    'subgraph-apps': ports.appsSubgraph,
    'subgraph-actors': ports.actorsSubgraph,
    'subgraph-payments': ports.paymentsSubgraph,
    'subgraph-events': ports.eventsSubgraph,
    gateway: ports.gateway,
    'xrpc-adapter': ports.api,
    'events-workers': ports.workers,
  }
  const componentOf: Record<keyof typeof processes, ComponentName> = {
    'subgraph-apps': 'apps',
    'subgraph-actors': 'actors',
    'subgraph-payments': 'payments',
    'subgraph-events': 'events',
    gateway: 'gateway',
    'xrpc-adapter': 'xrpc-adapter',
    'events-workers': 'workers',
  }

  // the webhook receiver: counts deliveries by id
  const received = new Set<string>()
  const receiver: Server = createServer((req, res) => {
    const id = req.headers['webhook-id']
    req.resume()
    req.on('end', () => {
      if (typeof id === 'string') received.add(id)
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
    })
  })
  await new Promise<void>((r) => receiver.listen(0, host, r))
  const receiverUrl = `http://${host}:${(receiver.address() as AddressInfo).port}/hook`

  const components = serviceComponents({ host, ports, redisUrl, redisPrefix }, { only: ['apps', 'actors', 'payments', 'events', 'tickets', 'gateway', 'xrpc-adapter', 'workers'] })
  const running = await startComponents(components, env, { stdio: 'ignore' })
  const { conn, models } = await connectApps(mongoUrl.toString())
  const counts = { status: 0, getConfig: 0, initiate: 0, testEvent: 0, errors: 0 }
  const deliveryIds: string[] = []
  const samples: Sample[] = []
  try {
    const app = await generateDidKeyKeypair('ES256K')
    await registerApp({ models }, { did: app.did, environment: 'test', appUrl: 'https://soak.example', feeShareBps: 100 })
    const api = `http://${host}:${ports.api}/xrpc`
    const jwt = (lxm: string) => mintServiceJwt({ keypair: app.keypair, iss: app.did, aud: serviceDid, lxm, expiresInSeconds: 60 })
    const xrpc = async (nsid: string, init: { query?: string; body?: unknown } = {}) => {
      const res = await fetch(`${api}/${nsid}${init.query ?? ''}`, {
        method: init.body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${await jwt(nsid)}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      })
      const text = await res.text()
      if (!res.ok) throw new Error(`${nsid} answered ${res.status} ${text}`)
      return JSON.parse(text) as Record<string, unknown>
    }
    await xrpc(UPDATE_CONFIG, { body: { environment: 'test', webhookUrl: receiverUrl } })
    const { key } = await issueApiKey({ models }, { appDid: app.did, environment: 'test', permissions: ['webhook.test.write'] })
    let order = 0
    const product = () =>
      buildProduct({
        recipientDid: app.did,
        paymentType: 'shop',
        amount: 1200,
        currency: 'usd',
        appOrderId: `soak-${order++}`,
        description: 'Soak poster',
        returnUrl: 'https://soak.example/thanks',
        cancelUrl: 'https://soak.example/cancel',
        environment: 'test',
      })
    const token = (await xrpc(INITIATE, { body: { product: product() } })).token as string

    const oneRequest = async (i: number) => {
      const slot = i % 20
      try {
        if (slot < 15) {
          await xrpc(STATUS, { query: `?token=${encodeURIComponent(token)}` })
          counts.status++
        } else if (slot < 17) {
          await xrpc(GET_CONFIG, { query: '?environment=test' })
          counts.getConfig++
        } else if (slot < 18) {
          await xrpc(INITIATE, { body: { product: product() } })
          counts.initiate++
        } else {
          const res = await fetch(`http://${host}:${ports.checkout}/api/app/developer/test-event?app=${encodeURIComponent(app.did)}`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}` },
          })
          const body = (await res.json()) as { deliveryId?: string }
          if (!res.ok || !body.deliveryId) throw new Error(`test-event answered ${res.status}`)
          deliveryIds.push(body.deliveryId)
          counts.testEvent++
        }
      } catch (err) {
        counts.errors++
        if (counts.errors <= 5) console.error(`soak: ${(err as Error).message}`)
      }
    }

    const sample = async (atSeconds: number) => {
      const s: Sample = { atSeconds, rss: {}, heap: {} }
      for (const [name, port] of Object.entries(processes)) {
        const res = await fetch(`http://${host}:${port}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } })
        const text = await res.text()
        s.rss[name] = +((metricValue(text, 'process_resident_memory_bytes') ?? 0) / 2 ** 20).toFixed(1)
        s.heap[name] = +((metricValue(text, 'nodejs_heap_size_used_bytes') ?? 0) / 2 ** 20).toFixed(1)
      }
      samples.push(s)
      const line = Object.keys(processes).map((n) => `${n} ${s.rss[n]}/${s.heap[n]}`).join(', ')
      console.log(`soak: ${atSeconds} s, ${counts.status + counts.getConfig + counts.initiate + counts.testEvent} requests, ${counts.errors} errors; RSS/heap MB: ${line}`)
    }

    /** process → live heap after a full collection (MB), once warm and at the end */
    const live: Record<string, number[]> = {}
    const snapshots = async () => {
      if (!HEAP_SNAPSHOT_DIR) return
      for (const name of Object.keys(processes) as (keyof typeof processes)[]) {
        const component = componentOf[name]
        const { liveBytes } = await heapSnapshot(running.children.get(component)!, join(HEAP_SNAPSHOT_DIR, component))
        ;(live[name] ??= []).push(+(liveBytes / 2 ** 20).toFixed(1))
      }
      console.log(`soak: live heap after a full collection, MB: ${Object.entries(live).map(([n, v]) => `${n} ${v.at(-1)}`).join(', ')}`)
    }

    console.log(`soak: ${MINUTES} min at ${RATE} requests/s, a memory sample every ${SAMPLE_SECONDS} s`)
    const started = Date.now()
    const end = started + MINUTES * 60_000
    let sent = 0
    let nextSample = started
    const inFlight = new Set<Promise<void>>()
    while (Date.now() < end) {
      if (Date.now() >= nextSample) {
        await sample(Math.round((Date.now() - started) / 1000))
        nextSample += SAMPLE_SECONDS * 1000
        // warm: the second sample
        if (samples.length === 2) await snapshots()
      }
      // keep to the rate: send what is due by now, then wait a little
      const due = Math.floor(((Date.now() - started) / 1000) * RATE)
      while (sent < due && inFlight.size < 200) {
        const p = oneRequest(sent++).finally(() => inFlight.delete(p))
        inFlight.add(p)
      }
      await new Promise((r) => setTimeout(r, 20))
    }
    await Promise.all(inFlight)
    await sample(Math.round((Date.now() - started) / 1000))
    await snapshots()
    // the deliveries of the last seconds arrive
    const deadline = Date.now() + 30_000
    while (deliveryIds.some((id) => !received.has(id)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200))
    const missing = deliveryIds.filter((id) => !received.has(id)).length

    console.log('')
    console.log(`requests: ${JSON.stringify(counts)}; deliveries ${deliveryIds.length - missing}/${deliveryIds.length} received`)
    console.log('| process | RSS MB first → last | heap used MB first → last | heap slope MB per 10 min |')
    console.log('|---|---|---|---|')
    // the first sample is taken before any load: the series starts at the second (warm)
    const warm = samples.length > 2 ? samples.slice(1) : samples
    for (const name of Object.keys(processes)) {
      const first = warm[0]!
      const last = warm.at(-1)!
      const perSecond = slope(warm.map((s) => s.atSeconds), warm.map((s) => s.heap[name]!))
      console.log(`| ${name} | ${first.rss[name]} → ${last.rss[name]} | ${first.heap[name]} → ${last.heap[name]} | ${(perSecond * 600).toFixed(1)} |`)
    }
    if (HEAP_SNAPSHOT_DIR) {
      console.log(`\nlive heap after a full collection (heap snapshots in ${HEAP_SNAPSHOT_DIR}), MB, warm → end:`)
      for (const [name, v] of Object.entries(live)) console.log(`- ${name}: ${v.join(' → ')}`)
    }
  } finally {
    await conn.close()
    await running.stop()
    receiver.close()
    await ferret?.stop()
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exit(1)
})
