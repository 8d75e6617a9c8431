/**
 * The fault-injection run (docs/operations.md, "Fault injection"): the service as deployed, each component its own
 * process (the five subgraphs, the gateway, the XRPC adapter, two events worker processes), on a FerretDB and a Redis
 * of the run's own. While an app produces events through the real HTTP stack (test events through the utility route,
 * payments initiated over XRPC and paid on the hosted checkout, ticket holds paid on theirs, free tickets claimed),
 * the run
 *   - keeps the app's webhook receiver down (connections refused) for three scaled days, the retry schedule's span;
 *   - SIGKILLs a worker process (its whole process group) every `killIntervalMs` once the other one is ready, and
 *     starts a new one at once;
 *   - SIGKILLs the payments subgraph at 20% of the outage, during the charge of a payment it starts for that (each
 *     test charge takes CHARGE_LATENCY_MS), and starts it again 1 s later (a kill that landed after the processor
 *     answered is started again and another payment is tried, up to MID_CHARGE_TRIES);
 *   - restarts Redis without persistence (every job, lock and counter is lost) at 40% of the outage;
 *   - kills FerretDB and starts it again on the same data at 70% of the outage;
 *   each fault once the one before it is over, when that is later.
 * Time is scaled: DELIVERY_SCHEDULE_SCALE makes the schedule's 72 hours last `outageSeconds`, and the endpoint-health
 * window (5 days) is scaled the same way, so the endpoint stays enabled.
 *
 * After the outage the receiver answers (after `receiverDelayMs`, so kills land during attempts). Deliveries still
 * `failed` once everything else arrived (those whose 14 attempts all fell in the outage) are redriven the way an
 * operator would after an outage longer than the schedule: the utility route's batch form. Then it counts, on both
 * sides: every event the service acknowledged must have arrived (loss is a failure; a repeat is allowed, delivery is
 * at least once, and is counted), every paid hold must have its tickets stored and issued, every payment and
 * ticket outbox event must have a delivery, every delivery must be `delivered` with a consistent attempt log.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { Queue } from 'bullmq'
import mongoose from 'mongoose'
import pMap from 'p-map'
import { connectApps, issueApiKey, registerApp } from '@svc/apps'
import { DOMAIN_EVENTS_QUEUE, WEBHOOK_DELIVERIES_QUEUE, deliveryIdForEvent } from '@svc/events'
import { outboxCollection, queuePrefix } from '@svc/outbox'
import { chargeKeyOf, UNANSWERED_PAYMENT_CLAIM_MS } from '@svc/payments'
import { CLAIM_ATTEMPT_SECONDS, HOLD_ATTEMPT_SECONDS } from '@svc/tickets'
import { buildProduct, mintAssertion } from '@svc/sdk'
import { generateDidKeyKeypair, mintServiceJwt } from '@svc/service-auth'
import { dropDatabase, FERRETDB_RESTART_PG_POOL, freePort, postgresForFerret, reservePort, startFerretDb, waitForPort, type RunningFerretDb } from '@svc/testing'
import { ROOT, TSX, bullWorkersConsume, componentEnv, freeComponentPorts, nodeProcesses, serviceComponents, startComponents, waitUntilAnswers } from './components'

/** The retry schedule's span that the outage stands for: three days. */
const OUTAGE_SCALED_MS = 3 * 24 * 3600_000
/** The endpoint-health window (DELIVERY_DISABLE_AFTER_MS's default): five days. */
const DISABLE_AFTER_SCALED_MS = 5 * 24 * 3600_000
/** The schedule's longest wait (22 h): after the outage, every pending delivery has its next attempt within it. */
const LONGEST_WAIT_SCALED_MS = 22 * 3600_000
/**
 * the test processor's wait before each charge: long enough for the run to see a charge under way and kill the
 * payments subgraph inside it, even on a loaded machine whose database reads take hundreds of milliseconds
 */
const CHARGE_LATENCY_MS = 5000
/** how many payments the run starts to catch one in its charge (on a loaded machine a pay can end unseen) */
const MID_CHARGE_TRIES = 5
/** how long the run waits for that payment to be in its charge (a loaded CI machine is several times slower) */
const CHARGING_WAIT_MS = 30_000
/** how many refused orders and claims are retried at once after the faults */
const RETRY_CONCURRENCY = 8
/**
 * how long a retried order's call keeps retrying ServiceUnavailable (with backoff, as the contract tells an app) once
 * the faults are over, when its own attempt in flight is not what it waits for
 */
const UNAVAILABLE_RETRY_MS = 30_000

export interface FaultOptions {
  /** real seconds standing for the three days the receiver is down (sets the time scale) */
  outageSeconds: number
  /** events produced per second, half test events, half payments */
  rate: number
  /** worker processes killed in all */
  workerKills: number
  /** between two kills */
  killIntervalMs: number
  /** the receiver answers after this long (default 20 ms) */
  receiverDelayMs?: number
  /** each process's output goes to <logDir>/<name>.log (default: a temporary folder, kept when the run fails) */
  logDir?: string
  /** the processes' LOG_LEVEL (default warn; info names every event, delivery and request, to follow one) */
  logLevel?: string
  log?: (line: string) => void
}

export interface InconsistentDelivery {
  id: string
  why: string
}

export interface FaultReport {
  backend: 'postgresql' | 'sqlite'
  /** DELIVERY_SCHEDULE_SCALE */
  scale: number
  seconds: number
  faults: { workerKills: number; redisRestarts: number; databaseRestarts: number; subgraphRestarts: number; receiverDownSeconds: number }
  /**
   * events the service acknowledged (a test event's delivery id, a paid checkout's answer); ticket orders are paid
   * holds, each owing a payment.completed and a ticket.issued per ticket; claims are free tickets, each owing its
   * ticket.issued
   */
  produced: { testEvents: number; payments: number; ticketOrders: number; tickets: number; claims: number }
  /** requests that failed while a fault was on (nothing was promised for them) */
  refused: { testEvents: number; payments: number; ticketOrders: number; claims: number }
  /** the answers of those requests: HTTP status (of the failing step), `network`, or `processing` (a pay whose charge's answer was lost) */
  refusedAnswers: Record<string, number>
  /** the first refusals other than unavailable, each with its step, answer and request id (the logs have the rest) */
  unexpectedRefusals: string[]
  /**
   * refused payment and ticket orders, retried once the faults were over with the same order id (as an app would):
   * `acknowledged` paid (`alreadyPaid` of them by the refused attempt, whose answer was lost), `unpaid` whose checkout
   * had failed, `unanswered` the orders whose refused attempt left a payment claim without outcome (its process was
   * killed or its database failed before the processor's answer was written), settled once the claim was a minute old
   * by asking the processor, `unavailable` the 503 ServiceUnavailable answers the retries met and retried with
   * backoff, `refused` what a retry could not do, each with its request's log lines: must be empty
   */
  retried: { orders: number; acknowledged: number; alreadyPaid: number; unpaid: number; unanswered: string[]; unavailable: number; refused: string[] }
  /**
   * the payment whose charge the payments subgraph's kill cut (its processor's answer lost with the process): its order
   * id, how its checkout ended, and the test processor's ledger entry for its key (`closed`: no charge, and none later)
   */
  killedMidCharge: { order: string; status: string | null; failureMessage: string | null; ledger: 'charged' | 'declined' | 'closed' | 'none' }
  /** an order id with more than one checkout or hold, or more than one payment.completed event: must be empty */
  idempotency: string[]
  /** acknowledged events that arrived at the receiver */
  delivered: number
  /** acknowledged events that never arrived: must be empty */
  missing: string[]
  /** arrivals of a delivery id already received (at least once allows them) */
  duplicates: number
  /** arrivals for an event whose request failed during a fault (it was made, its answer was lost) */
  unacknowledgedArrivals: number
  /** failed deliveries put back by the operator's redrive after the outage */
  redriven: number
  /** the database's side */
  /** attempts: in all, and those logged `interrupted` (a worker died during them) */
  deliveries: { total: number; byStatus: Record<string, number>; attempts: number; interruptedAttempts: number; notReceived: string[]; inconsistent: InconsistentDelivery[] }
  /** `why` of each event without a delivery: its outbox marks and its `domain-events` job's state (or `no job`) */
  outbox: { events: number; withoutDelivery: string[]; why?: string[] }
  /** where each process's output is */
  logDir: string
}

interface Worker {
  child: ChildProcess
  /** its /readyz (WORKERS_PORT) */
  readyUrl: string
}

interface Arrival {
  id: string
  type: string
  appOrderId: string | null
  /** a ticket's events and a ticket checkout's payment name its hold (the checkout's appOrderId is the hold id) */
  holdId: string | null
  ticketId: string | null
}

/** The app's webhook receiver: refuses connections until `up()`, then records every arrival and answers 200. */
async function startReceiver(delayMs: number) {
  const host = '127.0.0.1'
  // the port is known before anything listens on it (the webhook URL is configured while it is down)
  const reserved = await reservePort(host)
  await reserved.release()
  const arrivals: Arrival[] = []
  const counts = new Map<string, number>()
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const id = String(req.headers['webhook-id'] ?? '')
      let type = ''
      let appOrderId: string | null = null
      let holdId: string | null = null
      let ticketId: string | null = null
      try {
        const envelope = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { type: string; data?: { appOrderId?: string; holdId?: string; ticketId?: string } }
        type = envelope.type
        appOrderId = envelope.data?.appOrderId ?? null
        holdId = envelope.data?.holdId ?? null
        ticketId = envelope.data?.ticketId ?? null
      } catch {
        // an unreadable body is an arrival without a type: it matches nothing produced
      }
      arrivals.push({ id, type, appOrderId, holdId, ticketId })
      counts.set(id, (counts.get(id) ?? 0) + 1)
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
      }, delayMs)
    })
  })
  return {
    url: `http://${host}:${reserved.port}/webhooks`,
    arrivals,
    counts,
    up: () => new Promise<void>((resolve, reject) => (server.once('error', reject), server.listen(reserved.port, host, () => resolve()))),
    close: () => new Promise<void>((resolve) => (server.listening ? (server.closeAllConnections(), server.close(() => resolve())) : resolve())),
  }
}

/** A Redis of the run's own that keeps nothing on disk: a restart loses every key. */
async function startRedis(port: number, dir: string): Promise<{ child: ChildProcess; stop(): Promise<void> }> {
  const bin = process.env.REDIS_SERVER_BIN ?? 'redis-server'
  const child = spawn(bin, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const failed = new Promise<never>((_, reject) => child.once('error', (err) => reject(new Error(`${bin} did not start (REDIS_SERVER_BIN names another): ${err.message}`))))
  await Promise.race([waitForPort(port), failed])
  return {
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        child.once('exit', () => resolve())
        child.kill('SIGKILL')
      }),
  }
}

/** A pay that ended `processing`: its charge's answer was lost, and the checkout settles later (docs/decisions.md, "Recovery"). */
class Unsettled extends Error {}

class HttpStatus extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** Fetches with a timeout; one that passes names what had no answer (the report says which step it was). */
/**
 * The refusals a fault may cause, each retried with the order's key: 503, no answer, a pay left `processing`, and
 * 408, Node's own answer (before any handler ran) to a request it had not read whole within REQUEST_TIMEOUT_MS:
 * seen on 7 pay forms in one clean-clone run beside two test workers, its cause not found (docs/operations.md).
 */
export const TRANSIENT_REFUSALS: ReadonlySet<string> = new Set(['503', 'network', 'processing', '408'])

async function fetchWithin(what: string, url: string, init: RequestInit, timeoutMs = 10_000): Promise<{ res: Response; text: string }> {
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) })
    return { res, text: await res.text() }
  } catch (err) {
    if ((err as Error).name === 'TimeoutError') throw new Error(`${what}: no answer within ${timeoutMs / 1000} s`)
    throw err
  }
}

/**
 * Longer than a claim's or a hold's wait for its own attempt in flight (10 s, then 503: an attempt the database restart
 * cut off looks in flight for a while), so the answer arrives before the abort.
 */
const TICKETS_TIMEOUT_MS = 20_000

/** Each process's log lines about one request (its `reqId`), short: what a refused retry's report shows of its cause. */
export function requestLogLines(logDir: string, requestId: string): string[] {
  const lines: string[] = []
  for (const file of readdirSync(logDir).filter((f) => f.endsWith('.log'))) {
    for (const line of readFileSync(join(logDir, file), 'utf8').split('\n')) {
      if (!line.includes(requestId)) continue
      try {
        const entry = JSON.parse(line) as { msg?: string; err?: { type?: string; message?: string; code?: unknown } }
        const err = entry.err ? ` (${entry.err.type ?? 'error'}${entry.err.code === undefined ? '' : ` ${String(entry.err.code)}`}: ${String(entry.err.message).slice(0, 200)})` : ''
        lines.push(`${file.replace(/\.log$/, '')}: ${entry.msg ?? ''}${err}`)
      } catch {
        lines.push(`${file.replace(/\.log$/, '')}: ${line.slice(0, 300)}`)
      }
    }
  }
  return lines
}

/** Polls `done` until it holds (true) or the deadline passes (false). */
async function waitUntil(done: () => boolean | Promise<boolean>, deadline: number, everyMs = 200): Promise<boolean> {
  while (!(await done())) {
    if (Date.now() > deadline) return false
    await sleep(everyMs)
  }
  return true
}

/** The attempt log of a finished delivery, checked against its state; null when consistent. */
export function attemptLogProblem(d: { status: string; attemptCount: number; deliveredAt: Date | null; attempts?: { number: number; outcome: string; run: number }[] }): string | null {
  const attempts = d.attempts ?? []
  if (d.status !== 'delivered') return `status ${d.status}`
  if (!d.deliveredAt) return 'delivered without deliveredAt'
  const numbers = attempts.map((a) => a.number)
  if (attempts.length !== d.attemptCount) return `attemptCount ${d.attemptCount} but ${attempts.length} attempts logged (${numbers.join(',')})`
  if (numbers.some((n, i) => n !== i + 1)) return `attempt numbers ${numbers.join(',')}`
  if (attempts.some((a, i) => i > 0 && a.run < attempts[i - 1]!.run)) return 'runs out of order'
  const delivered = attempts.filter((a) => a.outcome === 'delivered').length
  if (delivered !== 1 || attempts.at(-1)?.outcome !== 'delivered') return `${delivered} delivered attempts, the last ${attempts.at(-1)?.outcome ?? 'missing'}`
  return null
}

export async function runFaults(opts: FaultOptions): Promise<FaultReport> {
  const started = Date.now()
  const log = (line: string) => opts.log?.(`[${((Date.now() - started) / 1000).toFixed(1)} s] ${line}`)
  const scale = (opts.outageSeconds * 1000) / OUTAGE_SCALED_MS
  const host = '127.0.0.1'
  const logDir = opts.logDir ?? mkdtempSync(join(tmpdir(), 'svc-faults-'))
  const runId = randomBytes(4).toString('hex')

  // what was started, stopped in reverse order whatever happens
  const teardown: (() => Promise<void>)[] = []
  try {
    // the database: restartable on the same port and data
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-faults-db-'))
    const adminUrl = await postgresForFerret()
    const pgDatabase = adminUrl ? `svc_faults_${process.pid}_${runId}` : undefined
    const ferretPort = await freePort()
    const startDatabase = () => startFerretDb({ port: ferretPort, dataDir, pgDatabase, temporary: false, pgPool: FERRETDB_RESTART_PG_POOL })
    let ferret: RunningFerretDb = await startDatabase()
    teardown.push(async () => {
      await ferret.stop()
      rmSync(dataDir, { recursive: true, force: true })
      if (adminUrl && pgDatabase) await dropDatabase(adminUrl, pgDatabase)
    })
    const mongoUrl = `mongodb://${host}:${ferretPort}/faults_${runId}`

    const redisDir = mkdtempSync(join(tmpdir(), 'svc-faults-redis-'))
    const redisPort = await freePort()
    let redis = await startRedis(redisPort, redisDir)
    teardown.push(async () => {
      await redis.stop()
      rmSync(redisDir, { recursive: true, force: true })
    })
    const redisUrl = `redis://${host}:${redisPort}/0`
    const redisPrefix = `svcfaults:${runId}:`

    const receiver = await startReceiver(opts.receiverDelayMs ?? 20)
    teardown.push(() => receiver.close())
    const ports = await freeComponentPorts()
    const serviceDid = 'did:web:svc.faults'
    const env: Record<string, string> = {
      NODE_ENV: 'development',
      NODE_OPTIONS: '', // not a test runner's flags
      LOG_LEVEL: opts.logLevel ?? 'warn',
      ...componentEnv({ host, ports, mongoUrl, redisUrl, redisPrefix, serviceDid }),
      OPERATOR_TOKEN: randomBytes(32).toString('hex'),
      DEV_ALLOW_LOOPBACK_WEBHOOKS: 'true',
      DELIVERY_SCHEDULE_SCALE: String(scale),
      DELIVERY_DISABLE_AFTER_MS: String(Math.max(1000, Math.round(DISABLE_AFTER_SCALED_MS * scale))),
      // a killed worker's job comes back after about this long
      DELIVERY_LOCK_MS: '1000',
      DELIVERY_RECONCILE_MS: '1000',
      DELIVERY_TIMEOUT_MS: '2000',
      // a charge takes this long: the payments subgraph is killed during one (docs/decisions.md, "Processors")
      TEST_PROCESSOR_LATENCY_MS: String(CHARGE_LATENCY_MS),
      // one app and one client address make every request: the limits are checked, never reached
      XRPC_RATE_LIMIT_MAX: '1000000000',
      UTILITY_RATE_LIMIT_MAX: '1000000000',
      PAY_ATTEMPTS_PER_ADDRESS: '1000000000',
    }
    log(`faults: logs in ${logDir}; FerretDB on ${ferret.backend}; scale ${scale.toExponential(2)} (3 days = ${opts.outageSeconds} s)\n`)
    const components = serviceComponents({ host, ports, redisUrl, redisPrefix }, { only: ['apps', 'actors', 'payments', 'events', 'tickets', 'gateway', 'xrpc-adapter'] })
    const running = await startComponents(components, env, { logDir })
    teardown.push(() => running.stop())
    log('faults: the subgraphs, the gateway and the adapter are up\n')

    // two worker processes, each in its own process group (tsx and the node process it runs), killed as a group
    const workers: Worker[] = []
    teardown.push(async () => void (await Promise.all(workers.map((w) => killGroup(w.child)))))
    const spawnWorker = async (slot: number): Promise<Worker> => {
      const out = openSync(join(logDir, `workers-${slot}.log`), 'a')
      const port = await freePort()
      const child = spawn(TSX, [join(ROOT, 'services/events/src/workers/main.ts')], {
        env: { ...process.env, ...env, WORKERS_PORT: String(port) },
        stdio: ['ignore', out, out],
        detached: true,
      })
      closeSync(out)
      return { child, readyUrl: `http://${host}:${port}/readyz` }
    }
    const killGroup = (child: ChildProcess) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        child.once('exit', () => resolve())
        try {
          process.kill(-child.pid!, 'SIGKILL')
        } catch {
          resolve() // already gone
        }
      })

    const faults = { workerKills: 0, redisRestarts: 0, databaseRestarts: 0, subgraphRestarts: 0, receiverDownSeconds: opts.outageSeconds }

    // The payments subgraph killed the hard way (its node process SIGKILLed: requests in flight cut, its outbox relay
    // gone mid-pass) and started again on its port, in a process group of its own so that the teardown stops it.
    const payments = components.find((c) => c.name === 'payments')!
    const killPayments = async () => {
      const old = running.children.get('payments')!
      const exited = new Promise<void>((resolve) => (old.exitCode !== null || old.signalCode !== null ? resolve() : old.once('exit', () => resolve())))
      for (const pid of nodeProcesses(old)) process.kill(pid, 'SIGKILL')
      await exited
    }
    const startPayments = async () => {
      await sleep(1000)
      const out = openSync(join(logDir, 'payments.log'), 'a')
      const child = spawn(TSX, [join(ROOT, payments.entry)], { env: { ...process.env, ...env }, stdio: ['ignore', out, out], detached: true })
      closeSync(out)
      teardown.push(() => killGroup(child))
      await waitUntilAnswers(payments.readyUrl!, 60_000)
    }
    /** ticket orders: each paid hold's id and how many tickets it bought; claims: each free ticket's id by its buyer */
    const produced = { testEvents: new Set<string>(), payments: new Set<string>(), ticketOrders: new Map<string, number>(), claims: new Map<string, string>() }
    const refused = { testEvents: 0, payments: 0, ticketOrders: 0, claims: 0 }
    const refusedAnswers: Record<string, number> = {}
    const unexpectedRefusals: string[] = []
    const refuse = (kind: keyof typeof refused, err: unknown) => {
      refused[kind]++
      const answer = err instanceof HttpStatus ? String(err.status) : err instanceof Unsettled ? 'processing' : 'network'
      refusedAnswers[answer] = (refusedAnswers[answer] ?? 0) + 1
      if (!TRANSIENT_REFUSALS.has(answer) && unexpectedRefusals.length < 10) unexpectedRefusals.push(`${kind}: ${(err as Error).message}`)
    }
    let redriven = 0
    let conn: mongoose.Connection | undefined
    teardown.push(async () => void (await conn?.close()))
    workers.push(await spawnWorker(0), await spawnWorker(1))
    const consuming = bullWorkersConsume(redisUrl, redisPrefix, [DOMAIN_EVENTS_QUEUE, WEBHOOK_DELIVERIES_QUEUE])
    if (!(await waitUntil(consuming, Date.now() + 60_000))) throw new Error(`the workers did not start within 60 s (see ${logDir})`)

    // the app: registered by the operator, its webhook configured over XRPC, an API key for the utility routes
    const app = await generateDidKeyKeypair('ES256K')
    const apps = await connectApps(mongoUrl)
    let apiKey: string
    try {
      await registerApp({ models: apps.models }, { did: app.did, environment: 'test', appUrl: 'https://faults.example', feeShareBps: 100 })
      apiKey = (await issueApiKey({ models: apps.models }, { appDid: app.did, environment: 'test', permissions: ['webhook.test.write', 'webhook.deliveries.redrive'] })).key
    } finally {
      await apps.conn.close()
    }
    const xrpc = async (nsid: string, body: unknown, timeoutMs = 10_000) => {
      const jwt = await mintServiceJwt({ keypair: app.keypair, iss: app.did, aud: serviceDid, lxm: nsid, expiresInSeconds: 60 })
      const { res, text } = await fetchWithin(
        nsid,
        `http://${host}:${ports.api}/xrpc/${nsid}`,
        { method: 'POST', headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' }, body: JSON.stringify(body) },
        timeoutMs,
      )
      if (!res.ok) throw new HttpStatus(res.status, `${nsid} answered ${res.status} (request ${res.headers.get('svc-request-id')}) ${text}`)
      return JSON.parse(text) as Record<string, unknown>
    }
    await xrpc('money.svc.app.updateConfig', { environment: 'test', webhookUrl: receiver.url, modules: { tickets: true } })
    // an event with one paid tier, large enough never to sell out: the run checks that paid tickets are issued
    const organizer = await generateDidKeyKeypair('ES256K')
    const eventUri = `at://${organizer.did}/community.lexicon.calendar.event/faults${runId}`
    const configured = (await xrpc('tickets.svc.configureTicketTiers', {
      environment: 'test',
      eventUri,
      organizerDid: organizer.did,
      organizerAssertionJwt: await mintAssertion({ keypair: organizer.keypair, did: organizer.did, serviceDid, nsid: 'tickets.svc.configureTicketTiers' }),
      tiers: [
        { name: 'Faults admission', priceAmount: 1500, currency: 'usd', capacity: 10_000 },
        { name: 'Faults open day', priceAmount: 0, currency: 'usd', capacity: 10_000 },
      ],
    })) as { tiers: { ticketTypeId: string; name: string }[] }
    const ticketTypeId = configured.tiers.find((t) => t.name === 'Faults admission')!.ticketTypeId
    const freeTierId = configured.tiers.find((t) => t.name === 'Faults open day')!.ticketTypeId
    const utility = (path: string, body?: unknown) =>
      fetch(`http://${host}:${ports.checkout}${path}${path.includes('?') ? '&' : '?'}app=${encodeURIComponent(app.did)}&environment=test`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(10_000),
      })

    // the buyer's side of a hosted checkout: the card form posted as a browser would
    const pay = async (checkoutUrl: string) => {
      const { res: paid, text: page } = await fetchWithin(`pay ${checkoutUrl}`, `${checkoutUrl}/pay`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ number: '4242 4242 4242 4242', expiry: '12/40', cvc: '123', name: 'Faye Faults' }).toString(),
        redirect: 'manual',
      })
      if (paid.status >= 400) throw new HttpStatus(paid.status, `pay answered ${paid.status} (request ${paid.headers.get('svc-request-id')}) ${page.slice(0, 300)}`)
      // completed: to the return URL; failed: to the cancel URL; processing (the charge's answer was lost): its page,
      // or back to it (303) when the pay outlasted the gateway's wait (a subgraph away): the charge may go on
      if (paid.status !== 303) return 'processing'
      const location = paid.headers.get('location') ?? ''
      if (location.startsWith('/checkout/')) return 'processing'
      return location.includes('svc_checkout=completed') ? 'completed' : 'failed'
    }

    /**
     * Pays the checkout; true once paid, false when it failed. On a retry the checkout may have been paid by the refused
     * attempt (its answer was lost), so a pay answered 409 (closed) is followed by reads of its page, which settle it,
     * until the database has its outcome.
     */
    const payOrFindPaid = async (checkoutUrl: string, appOrderId: string, retry: boolean): Promise<boolean> => {
      try {
        // a pay is one per checkout: repeated after no answer, it is answered 409 once the first took (below)
        const ended = await untilAvailable(retry, UNAVAILABLE_RETRY_MS, () => pay(checkoutUrl))
        if (ended !== 'processing') return ended === 'completed'
        // the charge's answer was lost (the database or the processor failed during it): the checkout ends as the
        // processor says, a minute after its claim at most; during the faults that is a refusal, retried afterwards
        if (!retry) throw new Unsettled(`order ${appOrderId}: its pay ended processing`)
      } catch (err) {
        if (!retry || !(err instanceof HttpStatus) || err.status !== 409 || !afterFaults.db) throw err
      }
      const db = afterFaults.db
      if (!db) throw new Error(`order ${appOrderId}: a retry before the faults ended`)
      let deadline = Date.now() + 20_000
      for (let first = true; ; first = false) {
        // a read of the page settles what it can; the first look is before it, to see a claim still without outcome
        if (!first) await fetchWithin(`checkout page ${checkoutUrl}`, checkoutUrl, {})
        const checkout = await db.collection<{ _id: string; status: string }>('checkouts').findOne({ appDid: app.did, environment: 'test', appOrderId }, { projection: { status: 1 } })
        if (checkout?.status === 'completed') {
          retried.alreadyPaid++
          return true
        }
        if (checkout?.status === 'failed') return false
        // the refused attempt's payment claim has no outcome (its process was killed, or its database failed, between
        // the claim and the outcome): pays are refused until the claim is a minute old, then the next read (processing)
        // or pay (pending) asks the processor what became of the charge (docs/decisions.md, "Recovery")
        const claim = checkout?.status === 'pending' || checkout?.status === 'processing' ? await db.collection<{ _id: string; outcome?: unknown; claimedAt: Date }>('settlements').findOne({ _id: checkout._id }) : null
        if (claim && !claim.outcome) {
          if (!retried.unanswered.includes(appOrderId)) retried.unanswered.push(appOrderId)
          deadline = Math.max(deadline, new Date(claim.claimedAt).getTime() + UNANSWERED_PAYMENT_CLAIM_MS + 20_000)
          if (checkout?.status === 'pending') await pay(checkoutUrl).catch(() => undefined)
        }
        if (Date.now() > deadline) throw new Error(`order ${appOrderId}: its checkout is still ${String(checkout?.status)} 20 s after the retry (or after its claim was a minute old)`)
        await sleep(500)
      }
    }

    // Refused orders are retried once the faults are over, as an app would: the same order id, the same content.
    const retries: (() => Promise<void>)[] = []
    const retried = { orders: 0, acknowledged: 0, alreadyPaid: 0, unpaid: 0, unanswered: [] as string[], unavailable: 0, refused: [] as string[] }
    /**
     * A call of a retried order: a 503 ServiceUnavailable is the contract's "retry with backoff" (a database just back,
     * the order's own attempt in flight until it lapses), and an app retries it, until `waitMs` has passed; so is a
     * call with no answer, or a 408 (TRANSIENT_REFUSALS): the same key makes the repeat safe. During the faults each is
     * a refusal like any other.
     */
    const untilAvailable = async <T>(retry: boolean, waitMs: number, call: () => Promise<T>): Promise<T> => {
      const deadline = Date.now() + waitMs
      for (let pause = 500; ; pause = Math.min(pause * 2, 4000)) {
        try {
          return await call()
        } catch (err) {
          const transient = err instanceof HttpStatus ? err.status === 503 || err.status === 408 : !(err instanceof Unsettled)
          if (!retry || !transient || Date.now() > deadline) throw err
          retried.unavailable++
          await sleep(pause)
        }
      }
    }
    /** the run's own connection, open once the faults are over (the retries read what a lost answer did) */
    const afterFaults: { db?: mongoose.Connection } = {}
    const retrying = (kind: keyof typeof refused, order: (retry: boolean) => Promise<boolean>) => async () => {
      try {
        await order(false)
      } catch (err) {
        refuse(kind, err)
        retries.push(async () => {
          retried.orders++
          try {
            if (await order(true)) retried.acknowledged++
            else retried.unpaid++
          } catch (err) {
            const message = (err as Error).message
            const requestId = /\(request (req_[0-9a-f]+)\)/.exec(message)?.[1]
            const lines = requestId ? requestLogLines(logDir, requestId) : []
            retried.refused.push(`${kind}: ${message}${lines.length > 0 ? `; its log lines: ${lines.join(' | ')}` : ''}`)
          }
        })
      }
    }

    const ticketOrder = (i: number) => async (retry: boolean) => {
      // a hold of one or two tickets, paid on its checkout
      const quantity = 1 + (Math.floor(i / 6) % 2)
      // the retry may meet the refused attempt's units without a hold, taken until they lapse (HOLD_ATTEMPT_SECONDS):
      // the service waits for them up to 10 s, then answers 503 ServiceUnavailable "retry"
      const hold = (await untilAvailable(retry, (HOLD_ATTEMPT_SECONDS + 30) * 1000, () =>
        xrpc('tickets.svc.createTicketHold', {
          environment: 'test',
          eventUri,
          buyerDid: `did:web:buyer-${i}.faults.example`,
          appOrderId: `faults-${runId}-tickets-${i}`,
          items: [{ ticketTypeId, quantity }],
        }, TICKETS_TIMEOUT_MS),
      )) as { holdId: string; checkout: { url: string } }
      if (!(await payOrFindPaid(hold.checkout.url, hold.holdId, retry))) return false
      produced.ticketOrders.set(hold.holdId, quantity)
      return true
    }
    const freeClaim = async (i: number) => {
      // a buyer's free ticket; the retry sends the same key and the same assertion (docs/tickets.md), which lives the
      // longest the service accepts (300 s): the retries come after the faults
      const buyer = await generateDidKeyKeypair('ES256K')
      const claim = {
        environment: 'test',
        eventUri,
        ticketTypeId: freeTierId,
        buyerDid: buyer.did,
        buyerAssertionJwt: await mintAssertion({ keypair: buyer.keypair, did: buyer.did, serviceDid, nsid: 'tickets.svc.claimFreeTicket', expiresInSeconds: 300 }),
        idempotencyKey: `faults-${runId}-claim-${i}`,
      }
      return async (retry: boolean) => {
        // the retry may meet the refused attempt's seat, still taken until it lapses (CLAIM_ATTEMPT_SECONDS after it):
        // the service waits for it up to 10 s, then answers 503 ServiceUnavailable "retry"
        const { ticket } = (await untilAvailable(retry, (CLAIM_ATTEMPT_SECONDS + 30) * 1000, () => xrpc('tickets.svc.claimFreeTicket', claim, TICKETS_TIMEOUT_MS))) as { ticket: { id: string } }
        produced.claims.set(buyer.did, ticket.id)
        return true
      }
    }
    const paymentOrder = (appOrderId: string) => async (retry: boolean) => {
      const product = buildProduct({
        recipientDid: app.did,
        paymentType: 'shop',
        amount: 1200,
        currency: 'usd',
        appOrderId,
        description: 'Fault-injection poster',
        returnUrl: 'https://faults.example/thanks',
        cancelUrl: 'https://faults.example/cancel',
        environment: 'test',
      })
      const { url } = (await untilAvailable(retry, UNAVAILABLE_RETRY_MS, () => xrpc('network.svc.payment.initiate', { product }))) as { url: string }
      if (!(await payOrFindPaid(url, appOrderId, retry))) return false
      produced.payments.add(appOrderId)
      return true
    }

    let order = 0
    const produceOne = async (i: number) => {
      if (i % 6 === 2) return retrying('ticketOrders', ticketOrder(i))()
      if (i % 6 === 5) return retrying('claims', await freeClaim(i))()
      if (i % 3 === 1) return retrying('payments', paymentOrder(`faults-${runId}-${order++}`))()
      try {
        const res = await utility('/api/app/developer/test-event')
        const answer = (await res.json()) as { deliveryId?: string }
        if (!res.ok || !answer.deliveryId) throw new HttpStatus(res.status, `test event answered ${res.status} (request ${res.headers.get('svc-request-id')}) ${JSON.stringify(answer)}`)
        produced.testEvents.add(answer.deliveryId)
      } catch (err) {
        // a test event has no idempotency key: it is not retried
        refuse('testEvents', err)
      }
    }

    // the run's own look at the database while the faults are on (the kill during a charge waits for its mark)
    const watch = await mongoose.createConnection(mongoUrl).asPromise()
    teardown.push(async () => void (await watch.close().catch(() => undefined)))
    let killedMidCharge = `faults-${runId}-killed-mid-charge`
    /** whether the processor's ledger holds the answer to the order's charge */
    const chargeAnswered = async (appOrderId: string) => {
      const checkout = await watch.collection<{ _id: string }>('checkouts').findOne({ appDid: app.did, environment: 'test', appOrderId })
      const entry = checkout ? await watch.collection<{ _id: string; result: unknown }>('test_processor_charges').findOne({ _id: chargeKeyOf(checkout._id) }) : null
      return entry?.result != null
    }

    // ---- the faults, on a timeline from t0 ----
    const t0 = Date.now()
    const outageMs = opts.outageSeconds * 1000
    // production goes on past the faults: on a loaded machine one that waited for the one before it (a slow restart)
    // ends later, and a window fixed to the clock would then have been all outage (a clean-clone run produced 48 test
    // events where others produced 90)
    let productionEnd = t0 + outageMs * 1.2
    let faultsOver = false
    const timeline: Promise<void>[] = []
    // each fault at its time, or once the one before it is over when that takes longer (a loaded machine): a payments
    // kill still waiting for a charge to catch met the Redis restart and the database kill, whose refusals ended its
    // payments before they were charging
    let previous: Promise<unknown> = Promise.resolve()
    const at = (ms: number, what: () => Promise<void>) => {
      const step = Promise.all([sleep(Math.max(0, t0 + ms - Date.now())), previous.catch(() => undefined)]).then(what)
      previous = step
      timeline.push(step)
    }
    at(outageMs * 0.2, async () => {
      // one payment is in its charge when the subgraph dies: marked processing, its processor's answer not yet back.
      // On a loaded machine the run's look may miss the 2 s charge (the pay ends first): another order is tried
      let paying: Promise<unknown> = Promise.resolve()
      for (let tries = 1; ; tries++) {
        let ended = false
        const order = tries === 1 ? killedMidCharge : `faults-${runId}-killed-mid-charge-${tries}`
        paying = retrying('payments', paymentOrder(order))().finally(() => {
          ended = true
        })
        const charging = async () => (await watch.collection('checkouts').countDocuments({ appOrderId: order, status: 'processing' })) === 1
        const seen = await waitUntil(async () => ended || (await charging()), Date.now() + CHARGING_WAIT_MS, 10)
        let why = ended ? 'its pay ended before the run saw it charging (paid, or refused)' : `it was not charging within ${CHARGING_WAIT_MS / 1000} s`
        if (seen && !ended) {
          await killPayments()
          faults.subgraphRestarts++
          // the checkout stays processing until its outcome is written after the charge: on a loaded machine the
          // kill can land after the processor answered (the payment then completes, rightly), which is not this fault
          if (!(await chargeAnswered(order))) {
            killedMidCharge = order
            break
          }
          why = 'its charge was answered before the kill landed'
          await startPayments()
        }
        if (tries === MID_CHARGE_TRIES || !(ended || seen)) throw new Error(`order ${order}: ${why} (see ${logDir})`)
        log(`faults: order ${order}: ${why}; another order is tried\n`)
      }
      log(`faults: ${((Date.now() - t0) / 1000).toFixed(0)} s: the payments subgraph killed during the charge of ${killedMidCharge}, started again after 1 s\n`)
      await startPayments()
      log(`faults: ${((Date.now() - t0) / 1000).toFixed(0)} s: the payments subgraph is ready again\n`)
      await paying
    })
    at(outageMs * 0.4, async () => {
      log(`faults: ${((Date.now() - t0) / 1000).toFixed(0)} s: Redis restarted, its data lost\n`)
      await redis.stop()
      redis = await startRedis(redisPort, redisDir)
      faults.redisRestarts++
    })
    at(outageMs * 0.7, async () => {
      log(`faults: ${((Date.now() - t0) / 1000).toFixed(0)} s: FerretDB killed, started again after 2 s\n`)
      await ferret.stop('SIGKILL')
      await sleep(2000)
      ferret = await startDatabase()
      faults.databaseRestarts++
    })
    at(outageMs, async () => {
      log(`faults: ${((Date.now() - t0) / 1000).toFixed(0)} s: the receiver answers\n`)
      await receiver.up()
    })

    const faultsDone = () => {
      faultsOver = true
      productionEnd = Math.max(productionEnd, Date.now() + outageMs * 0.3)
    }
    void Promise.all(timeline).then(faultsDone, faultsDone)
    const producer = (async () => {
      let sent = 0
      const inFlight = new Set<Promise<void>>()
      while (!faultsOver || Date.now() < productionEnd) {
        const due = Math.floor(((Date.now() - t0) / 1000) * opts.rate)
        while (sent < due && inFlight.size < 50) {
          const p = produceOne(sent++).finally(() => inFlight.delete(p))
          inFlight.add(p)
        }
        await sleep(20)
      }
      await Promise.all(inFlight)
    })()

    /** what the receiver still lacks of what was acknowledged: a test event's id, `payment <order>`, `tickets <hold>: k of n` */
    const notArrived = (): string[] => {
      const ids = new Set(receiver.arrivals.map((a) => a.id))
      const orders = new Set(receiver.arrivals.filter((a) => a.type === 'payment.completed').map((a) => a.appOrderId))
      const ticketsOf = new Map<string, Set<string>>()
      for (const a of receiver.arrivals) if (a.type === 'ticket.issued' && a.holdId && a.ticketId) ticketsOf.set(a.holdId, (ticketsOf.get(a.holdId) ?? new Set()).add(a.ticketId))
      const issued = new Set(receiver.arrivals.filter((a) => a.type === 'ticket.issued').map((a) => a.ticketId))
      return [
        ...[...produced.testEvents].filter((id) => !ids.has(id)),
        ...[...produced.payments].filter((o) => !orders.has(o)).map((o) => `payment ${o}`),
        ...[...produced.ticketOrders.keys()].filter((h) => !orders.has(h)).map((h) => `payment of hold ${h}`),
        ...[...produced.ticketOrders].filter(([h, n]) => (ticketsOf.get(h)?.size ?? 0) !== n).map(([h, n]) => `tickets ${h}: ${ticketsOf.get(h)?.size ?? 0} of ${n} arrived`),
        ...[...produced.claims.values()].filter((t) => !issued.has(t)).map((t) => `claimed ticket ${t}`),
      ]
    }
    const arrived = () => notArrived().length === 0
    // A kill waits for the other worker to be ready, so one is always at work and every kill lands in a working
    // process (without it, kills faster than a worker starts would only keep the workers down).
    const killer = (async () => {
      // every kill is made, whatever has arrived meanwhile: the count is the run's, not the machine's speed
      while (faults.workerKills < opts.workerKills) {
        await sleep(opts.killIntervalMs)
        const slot = faults.workerKills % workers.length
        const otherSlot = (slot + 1) % workers.length
        const other = workers[otherSlot]!
        await waitUntilAnswers(other.readyUrl, 60_000).catch((err: unknown) => {
          // a worker that exited by itself is the finding, not the wait
          const { exitCode, signalCode } = other.child
          if (exitCode === null && signalCode === null) throw err
          throw new Error(`the events worker in slot ${otherSlot} exited on its own (${signalCode ?? `code ${exitCode}`}); its output: ${join(logDir, `workers-${otherSlot}.log`)}`)
        })
        await killGroup(workers[slot]!.child)
        faults.workerKills++
        workers[slot] = await spawnWorker(slot)
      }
    })().then(
      () => null,
      (err: unknown) => err,
    )

    await producer
    await Promise.all(timeline)
    const db = (conn = await mongoose.createConnection(mongoUrl).asPromise())
    afterFaults.db = db
    const toRetry = retries.splice(0)
    // independent orders, a few at a time: one that waits (a claim a minute old, a 2-s charge) holds up no other
    await pMap(toRetry, (retry) => retry(), { concurrency: RETRY_CONCURRENCY })
    if (toRetry.length > 0) log(`faults: ${toRetry.length} refused orders and claims retried with their keys: ${retried.acknowledged} paid or claimed (${retried.alreadyPaid} by the refused attempt), ${retried.unpaid} not paid (${retried.unanswered.length} settled by asking the processor), ${retried.unavailable} answers 503, 408 or none retried with backoff, ${retried.refused.length} refused\n`)
    log(`faults: ${((Date.now() - t0) / 1000).toFixed(0)} s: produced ${produced.testEvents.size} test events, ${produced.payments.size} payments, ${produced.ticketOrders.size} ticket orders and ${produced.claims.size} claims (${refused.testEvents + refused.payments + refused.ticketOrders + refused.claims} refused during faults); waiting for their arrival\n`)
    // Every pending delivery has its next attempt within the schedule's longest wait after the outage. The wait ends
    // early once all arrived, or once no delivery is open any more (what has not arrived failed: it is redriven below).
    const noneOpen = async () => (await db.collection('deliveries').countDocuments({ status: { $in: ['pending', 'held'] } }).catch(() => 1)) === 0
    const longestWaitMs = LONGEST_WAIT_SCALED_MS * scale * 1.1
    const deadline = Date.now() + longestWaitMs + 30_000
    await waitUntil(async () => arrived() || (await noneOpen()), deadline)
    log(`faults: ${arrived() ? 'all arrived' : 'some have not arrived'}; ${faults.workerKills} workers killed so far\n`)
    const killFailed = await killer
    if (killFailed) throw killFailed
    // an outage longer than the schedule leaves the first deliveries failed: the operator redrives them
    const res = await utility('/api/webhooks/atm', { status: 'failed', limit: 1000 })
    const answer = (await res.json()) as { queued?: number }
    if (!res.ok) throw new Error(`the redrive answered ${res.status} ${JSON.stringify(answer)}`)
    redriven = answer.queued ?? 0
    if (redriven > 0) log(`faults: ${redriven} deliveries failed after 14 attempts in the outage; redriven\n`)
    await waitUntil(arrived, Date.now() + 30_000)
    // the outcomes of the last attempts are written after their arrival
    await sleep(2000)
    // An event whose request was refused (its write landed, the answer did not) reaches no one the run waits for: the
    // outbox poll relays it, up to about 8 s later when it had backed off. Its delivery must exist by then.
    const OUTBOXES = [outboxCollection('payments'), outboxCollection('tickets')]
    const eventsWithoutDelivery = async () => {
      const ids: string[] = []
      for (const outbox of OUTBOXES) ids.push(...(await db.collection(outbox).find({}, { projection: { _id: 1 } }).toArray()).map((e) => String(e._id)))
      const have = new Set((await db.collection<{ _id: string }>('deliveries').find({ _id: { $in: ids.map(deliveryIdForEvent) } }, { projection: { _id: 1 } }).toArray()).map((d) => String(d._id)))
      return { events: ids.length, withoutDelivery: ids.filter((id) => !have.has(deliveryIdForEvent(id))) }
    }
    await waitUntil(async () => (await eventsWithoutDelivery()).withoutDelivery.length === 0, Date.now() + 20_000)
    // what became of an event still without its delivery: relayed or not, and where its job is
    const whyWithoutDelivery = async (eventIds: string[]): Promise<string[]> => {
      if (eventIds.length === 0) return []
      const queue = new Queue(DOMAIN_EVENTS_QUEUE, { connection: { url: redisUrl }, prefix: queuePrefix(redisPrefix) })
      try {
        const events = (await Promise.all(OUTBOXES.map((outbox) => db.collection(outbox).find({ _id: { $in: eventIds } } as never).toArray()))).flat()
        return await Promise.all(
          events.map(async (e) => {
            const job = await queue.getJob(String(e._id))
            const jobState = job ? `job ${await job.getState()} (attempts ${job.attemptsMade}, ${job.failedReason ?? 'no failure'})` : 'no job'
            return `${String(e._id)}: occurred ${(e.occurredAt as Date).toISOString()}, relayed ${String(e.relayed)} at ${e.relayedAt ? (e.relayedAt as Date).toISOString() : '-'}, ${jobState}`
          }),
        )
      } finally {
        await queue.close()
      }
    }

    // ---- the counts ----
    const ids = new Set(receiver.arrivals.map((a) => a.id))
    // the database's side of the ticket orders: each paid hold has exactly its tickets, issued
    const storedTickets = await db.collection('tickets').find({ holdId: { $in: [...produced.ticketOrders.keys()] } }, { projection: { holdId: 1, status: 1 } }).toArray()
    const ticketProblems = [...produced.ticketOrders].flatMap(([h, n]) => {
      const own = storedTickets.filter((t) => t.holdId === h)
      const issued = own.filter((t) => t.status === 'issued').length
      return own.length === n && issued === n ? [] : [`hold ${h}: ${own.length} tickets stored, ${issued} issued, of ${n} paid for`]
    })
    // one free ticket per claiming buyer (each claimed once, retried with the same key when refused)
    const claimed = await db.collection('tickets').find({ buyerDid: { $in: [...produced.claims.keys()] } }, { projection: { buyerDid: 1, status: 1 } }).toArray()
    const claimProblems = [...produced.claims.keys()].flatMap((buyer) => {
      const own = claimed.filter((t) => t.buyerDid === buyer)
      return own.length === 1 && own[0]!.status === 'issued' ? [] : [`claim of ${buyer}: ${own.length} tickets (${own.map((t) => String(t.status)).join(', ')})`]
    })
    const missing = [...notArrived(), ...ticketProblems, ...claimProblems]
    // one checkout per order id (a hold's is its hold id), one hold per ticket order id, one payment.completed per order
    const moreThanOnce = (values: unknown[]) => {
      const seen = new Map<string, number>()
      for (const v of values) seen.set(String(v), (seen.get(String(v)) ?? 0) + 1)
      return [...seen].filter(([, n]) => n > 1)
    }
    const checkoutOrders = (await db.collection('checkouts').find({ appDid: app.did }, { projection: { appOrderId: 1 } }).toArray()).map((c) => c.appOrderId)
    const holdOrders = (await db.collection('ticket_holds').find({ appDid: app.did }, { projection: { appOrderId: 1 } }).toArray()).map((h) => h.appOrderId)
    const paymentEvents = new Map<string, string>()
    for (const a of receiver.arrivals) if (a.type === 'payment.completed') paymentEvents.set(a.id, String(a.appOrderId))
    const idempotency = [
      ...moreThanOnce(checkoutOrders).map(([o, n]) => `order ${o}: ${n} checkouts`),
      ...moreThanOnce(holdOrders).map(([o, n]) => `ticket order ${o}: ${n} holds`),
      ...moreThanOnce([...paymentEvents.values()]).map(([o, n]) => `order ${o}: ${n} payment.completed events`),
    ]
    const duplicates = [...receiver.counts.values()].reduce((a, n) => a + n - 1, 0)
    const claimedTickets = new Set(produced.claims.values())
    const acknowledged = (a: Arrival) =>
      produced.testEvents.has(a.id) ||
      (a.type === 'payment.completed' && (produced.payments.has(a.appOrderId ?? '') || produced.ticketOrders.has(a.appOrderId ?? ''))) ||
      (a.type === 'ticket.issued' && (produced.ticketOrders.has(a.holdId ?? '') || claimedTickets.has(a.ticketId ?? '')))
    const acknowledgedArrivals = receiver.arrivals.filter(acknowledged)
    const unacknowledgedArrivals = new Set(receiver.arrivals.filter((a) => !acknowledged(a)).map((a) => a.id)).size

    const deliveries = await db.collection('deliveries').find({}).toArray()
    const byStatus: Record<string, number> = {}
    const inconsistent: InconsistentDelivery[] = []
    const notReceived: string[] = []
    let attempts = 0
    let interruptedAttempts = 0
    for (const d of deliveries) {
      const attemptLog = (d.attempts ?? []) as { outcome: string }[]
      attempts += attemptLog.length
      interruptedAttempts += attemptLog.filter((a) => a.outcome === 'interrupted').length
      const id = String(d._id)
      byStatus[d.status as string] = (byStatus[d.status as string] ?? 0) + 1
      const problem = attemptLogProblem(d as unknown as Parameters<typeof attemptLogProblem>[0])
      if (problem) inconsistent.push({ id, why: problem })
      if (!ids.has(id)) notReceived.push(id)
    }
    const midCharge = await db.collection<{ _id: string; status: string; failureMessage?: string | null }>('checkouts').findOne({ appDid: app.did, environment: 'test', appOrderId: killedMidCharge })
    const ledgerEntry = midCharge ? await db.collection<{ _id: string; result: { ok: boolean } | null }>('test_processor_charges').findOne({ _id: chargeKeyOf(midCharge._id) }) : null
    const killedMidChargeReport: FaultReport['killedMidCharge'] = {
      order: killedMidCharge,
      status: midCharge?.status ?? null,
      failureMessage: midCharge?.failureMessage ?? null,
      ledger: !ledgerEntry ? 'none' : !ledgerEntry.result ? 'closed' : ledgerEntry.result.ok ? 'charged' : 'declined',
    }
    const found = await eventsWithoutDelivery()
    const outbox = found.withoutDelivery.length === 0 ? found : { ...found, why: await whyWithoutDelivery(found.withoutDelivery) }
    const report: FaultReport = {
      backend: ferret.backend,
      scale,
      seconds: Math.round((Date.now() - started) / 1000),
      faults,
      produced: {
        testEvents: produced.testEvents.size,
        payments: produced.payments.size,
        ticketOrders: produced.ticketOrders.size,
        tickets: [...produced.ticketOrders.values()].reduce((a, n) => a + n, 0),
        claims: produced.claims.size,
      },
      refused,
      refusedAnswers,
      unexpectedRefusals,
      retried,
      killedMidCharge: killedMidChargeReport,
      idempotency,
      // one per acknowledged event: a payment by its order (a ticket checkout's is its hold), a ticket by its id
      delivered: new Set(acknowledgedArrivals.map((a) => (a.type === 'payment.completed' ? `payment ${a.appOrderId}` : a.type === 'ticket.issued' ? `ticket ${a.ticketId}` : a.id))).size,
      missing,
      duplicates,
      unacknowledgedArrivals,
      redriven,
      deliveries: { total: deliveries.length, byStatus, attempts, interruptedAttempts, notReceived, inconsistent },
      outbox,
      logDir,
    }
    // a temporary log folder is kept only when the run lost or left something inconsistent, or a refusal was other
    // than unavailable (a 500's request id is in the logs)
    const clean = missing.length + notReceived.length + outbox.withoutDelivery.length + inconsistent.length + unexpectedRefusals.length + retried.refused.length + idempotency.length === 0
    if (clean && !opts.logDir) rmSync(logDir, { recursive: true, force: true })
    return report
  } finally {
    for (const step of teardown.reverse()) await step().catch((err: unknown) => log(`faults: teardown: ${String(err)}\n`))
  }
}
