/**
 * Starts the deployable components as child processes (each its own `tsx src/main.ts`), waits until
 * each is ready (answers HTTP, or for the workers: consumes its queues), and stops them all. Shared by the dev
 * command, the benchmark and the soak.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { Queue } from 'bullmq'
import Redis from 'ioredis'
import { DOMAIN_EVENTS_QUEUE, WEBHOOK_DELIVERIES_QUEUE, queuePrefix } from '@svc/events'
import { freePort } from '@svc/testing'

export const ROOT = join(__dirname, '..', '..')
export const TSX = join(ROOT, 'node_modules', '.bin', 'tsx')

export interface Component {
  name: ComponentName
  entry: string
  /** a URL that answers (any HTTP status) once the component is up */
  readyUrl?: string
  /** for a component without HTTP (the workers): true once it is up */
  isReady?: () => Promise<boolean>
  /** what the component waits for, in the error when it does not get ready */
  readyDescription?: string
}

/** Every component of the service, in start order. */
export const COMPONENT_NAMES = ['apps', 'actors', 'payments', 'events', 'tickets', 'gateway', 'xrpc-adapter', 'workers', 'board'] as const
export type ComponentName = (typeof COMPONENT_NAMES)[number]

export interface RunningComponents {
  children: Map<string, ChildProcess>
  stop(): Promise<void>
}

async function answers(url: string): Promise<boolean> {
  try {
    const graphql = url.endsWith('/graphql')
    const res = await fetch(url, {
      method: graphql ? 'POST' : 'GET',
      headers: graphql ? { 'content-type': 'application/json' } : {},
      body: graphql ? '{"query":"{__typename}"}' : undefined,
      signal: AbortSignal.timeout(1000),
    })
    // a readiness route answers 503 until its dependencies answer; anything else is up once it answers at all
    return url.endsWith('/readyz') ? res.ok : true
  } catch {
    return false
  }
}

export async function waitUntilAnswers(url: string, timeoutMs = 60000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await answers(url))) {
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs / 1000} s`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

/** True once every queue has a BullMQ worker connected (BullMQ names its workers' Redis connections per queue). */
export function bullWorkersConsume(redisUrl: string, redisPrefix: string, queues: readonly string[]): () => Promise<boolean> {
  return async () => {
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true })
    try {
      await redis.connect()
      for (const name of queues) {
        const queue = new Queue(name, { connection: redis, prefix: queuePrefix(redisPrefix) })
        try {
          if ((await queue.getWorkers()).length === 0) return false
        } finally {
          await queue.close()
        }
      }
      return true
    } catch {
      return false
    } finally {
      redis.disconnect()
    }
  }
}

/** Waits until the component is ready; fails at once if its process exits first. */
async function waitUntilReady(c: Component, child: ChildProcess, timeoutMs = 60000): Promise<void> {
  const probe = c.isReady ?? (c.readyUrl ? () => answers(c.readyUrl as string) : null)
  if (!probe) throw new Error(`${c.name}: no readiness check`)
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${c.name} exited (${child.exitCode ?? child.signalCode}) before it was ready`)
    }
    if (await probe()) return
    if (Date.now() > deadline) throw new Error(`${c.name} was not ready (${c.readyDescription ?? c.readyUrl}) within ${timeoutMs / 1000} s`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

export async function startComponents(
  components: Component[],
  env: Record<string, string | undefined>,
  opts: {
    stdio?: 'inherit' | 'ignore'
    /** each component's output (stdout and stderr) appended to <logDir>/<name>.log instead */
    logDir?: string
    onUnexpectedExit?: (name: string, code: number | null) => void
  } = {},
): Promise<RunningComponents> {
  const children = new Map<string, ChildProcess>()
  let stopping = false
  const stop = async () => {
    stopping = true
    await Promise.all(
      [...children.values()].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve()
            const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
            child.once('exit', () => (clearTimeout(timer), resolve()))
            child.kill('SIGTERM')
          }),
      ),
    )
  }
  try {
    // In order, each once the previous is ready: the gateway composes the subgraphs' schemas when it starts, and
    // the workers look app endpoints up through the gateway.
    for (const c of components) {
      // CPU_PROFILE_DIR: each component's processes write V8 CPU profiles to <dir>/<component>/ when they stop (--cpu-prof)
      if (process.env.HEAP_SNAPSHOT_DIR) mkdirSync(join(process.env.HEAP_SNAPSHOT_DIR, c.name), { recursive: true })
      const profile = process.env.CPU_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${join(process.env.CPU_PROFILE_DIR, c.name)}`] : []
      // HEAP_SNAPSHOT_DIR: a SIGUSR2 to a component's node process writes a heap snapshot to <dir>/<component>/ (heapSnapshot)
      if (process.env.HEAP_SNAPSHOT_DIR) profile.push('--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${join(process.env.HEAP_SNAPSHOT_DIR, c.name)}`)
      const log = opts.logDir ? openSync(join(opts.logDir, `${c.name}.log`), 'a') : null
      const stdio = log === null ? (['ignore', opts.stdio ?? 'inherit', 'inherit'] as const) : (['ignore', log, log] as const)
      const child = spawn(TSX, [...profile, join(ROOT, c.entry)], { env: { ...process.env, ...env }, stdio: [...stdio] })
      if (log !== null) closeSync(log) // the child has its own copy
      let ready = false
      child.once('exit', (code) => {
        // before it is ready, the wait below reports the exit
        if (!stopping && ready) opts.onUnexpectedExit?.(c.name, code)
      })
      children.set(c.name, child)
      await waitUntilReady(c, child)
      ready = true
    }
  } catch (err) {
    await stop()
    throw err
  }
  return { children, stop }
}

/**
 * The components of the service, in start order (COMPONENT_NAMES), for a configuration: the subgraphs, the gateway
 * composing them, the XRPC adapter, then the events workers and the operators' board. `only` picks some of them.
 */
export function serviceComponents(
  cfg: {
    host: string
    redisUrl: string
    redisPrefix: string
    ports: {
      appsSubgraph: number
      actorsSubgraph: number
      paymentsSubgraph: number
      eventsSubgraph: number
      ticketsSubgraph: number
      gateway: number
      api: number
      checkout: number
      board: number
    }
  },
  opts: { only?: readonly ComponentName[] } = {},
): Component[] {
  const at = (port: number, path: string) => `http://${cfg.host}:${port}${path}`
  const workerQueues = [DOMAIN_EVENTS_QUEUE, WEBHOOK_DELIVERIES_QUEUE]
  const all: Component[] = [
    { name: 'apps', entry: 'services/apps/src/main.ts', readyUrl: at(cfg.ports.appsSubgraph, '/readyz') },
    { name: 'actors', entry: 'services/actors/src/main.ts', readyUrl: at(cfg.ports.actorsSubgraph, '/readyz') },
    { name: 'payments', entry: 'services/payments/src/main.ts', readyUrl: at(cfg.ports.paymentsSubgraph, '/readyz') },
    { name: 'events', entry: 'services/events/src/main.ts', readyUrl: at(cfg.ports.eventsSubgraph, '/readyz') },
    { name: 'tickets', entry: 'services/tickets/src/main.ts', readyUrl: at(cfg.ports.ticketsSubgraph, '/readyz') },
    { name: 'gateway', entry: 'gateway/src/main.ts', readyUrl: at(cfg.ports.gateway, '/readyz') },
    { name: 'xrpc-adapter', entry: 'xrpc-adapter/src/main.ts', readyUrl: at(cfg.ports.checkout, '/readyz') },
    {
      name: 'workers',
      entry: 'services/events/src/workers/main.ts',
      isReady: bullWorkersConsume(cfg.redisUrl, cfg.redisPrefix, workerQueues),
      readyDescription: `a worker on ${workerQueues.join(' and ')}`,
    },
    { name: 'board', entry: 'services/events/src/board/main.ts', readyUrl: at(cfg.ports.board, '/health') },
  ]
  return opts.only ? all.filter((c) => opts.only?.includes(c.name)) : all
}

/** The ports of every component, each a free one on this machine (the bench and the soak run beside anything). */
export async function freeComponentPorts() {
  return {
    api: await freePort(),
    checkout: await freePort(),
    gateway: await freePort(),
    appsSubgraph: await freePort(),
    actorsSubgraph: await freePort(),
    paymentsSubgraph: await freePort(),
    eventsSubgraph: await freePort(),
    ticketsSubgraph: await freePort(),
    board: await freePort(),
    workers: await freePort(),
  }
}

export type ComponentPorts = Awaited<ReturnType<typeof freeComponentPorts>>

/** The environment that puts every component on its port and its neighbours' URLs (the rest is the caller's). */
export function componentEnv(cfg: { host: string; ports: ComponentPorts; mongoUrl: string; redisUrl: string; redisPrefix: string; serviceDid: string }): Record<string, string> {
  const { host, ports } = cfg
  const at = (port: number, path = '') => `http://${host}:${port}${path}`
  return {
    MONGO_URL: cfg.mongoUrl,
    REDIS_URL: cfg.redisUrl,
    REDIS_PREFIX: cfg.redisPrefix,
    SERVICE_DID: cfg.serviceDid,
    HOST: host,
    API_PORT: String(ports.api),
    CHECKOUT_PORT: String(ports.checkout),
    BASE_URL: at(ports.api),
    CHECKOUT_URL: at(ports.checkout),
    DASHBOARD_URL: at(ports.checkout, '/dashboard'),
    GATEWAY_PORT: String(ports.gateway),
    GATEWAY_URL: at(ports.gateway, '/graphql'),
    APPS_SUBGRAPH_PORT: String(ports.appsSubgraph),
    APPS_SUBGRAPH_URL: at(ports.appsSubgraph, '/graphql'),
    ACTORS_SUBGRAPH_PORT: String(ports.actorsSubgraph),
    ACTORS_SUBGRAPH_URL: at(ports.actorsSubgraph, '/graphql'),
    PAYMENTS_SUBGRAPH_PORT: String(ports.paymentsSubgraph),
    PAYMENTS_SUBGRAPH_URL: at(ports.paymentsSubgraph, '/graphql'),
    EVENTS_SUBGRAPH_PORT: String(ports.eventsSubgraph),
    EVENTS_SUBGRAPH_URL: at(ports.eventsSubgraph, '/graphql'),
    TICKETS_SUBGRAPH_PORT: String(ports.ticketsSubgraph),
    TICKETS_SUBGRAPH_URL: at(ports.ticketsSubgraph, '/graphql'),
    BOARD_PORT: String(ports.board),
    WORKERS_PORT: String(ports.workers),
  }
}

/** The node processes that tsx runs a component in (tsx's own process is their parent); none once they exited. */
export function nodeProcesses(child: ChildProcess): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number)
  } catch {
    return [] // pgrep exits 1 when it finds none
  }
}

/**
 * Makes a component started with HEAP_SNAPSHOT_DIR write a heap snapshot (V8 collects all garbage first) and returns
 * the live heap it found, in bytes: the sum of every object's own size. The signal goes to the node process that tsx
 * runs the component in (tsx's own process is its parent).
 */
export async function heapSnapshot(child: ChildProcess, dir: string, timeoutMs = 60_000): Promise<{ file: string; liveBytes: number }> {
  const before = new Set(existsSync(dir) ? readdirSync(dir) : [])
  const pids = nodeProcesses(child)
  if (pids.length === 0) throw new Error(`no node process under ${child.pid}`)
  for (const pid of pids) process.kill(pid, 'SIGUSR2')
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const file = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f))
    if (file) {
      // the process collects garbage before it writes: the file is complete once it has grown and stopped growing
      const path = join(dir, file)
      let size = -1
      while (statSync(path).size === 0 || statSync(path).size !== size) {
        if (Date.now() > deadline) throw new Error(`the heap snapshot ${path} was not complete after ${timeoutMs / 1000} s`)
        size = statSync(path).size
        await new Promise((r) => setTimeout(r, 1000))
      }
      return { file: path, liveBytes: liveBytes(path) }
    }
    if (Date.now() > deadline) throw new Error(`no heap snapshot in ${dir} after ${timeoutMs / 1000} s`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

/** The sum of the self sizes of a heap snapshot's nodes. */
function liveBytes(path: string): number {
  const snapshot = JSON.parse(readFileSync(path, 'utf8')) as { snapshot: { meta: { node_fields: string[] } }; nodes: number[] }
  const fields = snapshot.snapshot.meta.node_fields
  const selfSize = fields.indexOf('self_size')
  let total = 0
  for (let i = selfSize; i < snapshot.nodes.length; i += fields.length) total += snapshot.nodes[i]!
  return total
}
