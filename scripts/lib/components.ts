/**
 * Starts the deployable components as child processes (each its own `tsx src/main.ts`), waits until
 * each answers, and stops them all. Shared by the dev command and the benchmark.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'

export const ROOT = join(__dirname, '..', '..')
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx')

export interface Component {
  name: string
  entry: string
  /** a URL that answers (any HTTP status) once the component is up */
  readyUrl: string
}

export interface RunningComponents {
  children: Map<string, ChildProcess>
  stop(): Promise<void>
}

async function answers(url: string): Promise<boolean> {
  try {
    const graphql = url.endsWith('/graphql')
    await fetch(url, {
      method: graphql ? 'POST' : 'GET',
      headers: graphql ? { 'content-type': 'application/json' } : {},
      body: graphql ? '{"query":"{__typename}"}' : undefined,
      signal: AbortSignal.timeout(1000),
    })
    return true
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

export async function startComponents(
  components: Component[],
  env: Record<string, string | undefined>,
  opts: { stdio?: 'inherit' | 'ignore'; onUnexpectedExit?: (name: string, code: number | null) => void } = {},
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
    // In order, each once the previous answers: the gateway composes the subgraphs' schemas when it starts.
    for (const c of components) {
      const child = spawn(TSX, [join(ROOT, c.entry)], { env: { ...process.env, ...env }, stdio: ['ignore', opts.stdio ?? 'inherit', 'inherit'] })
      child.once('exit', (code) => {
        if (!stopping) opts.onUnexpectedExit?.(c.name, code)
      })
      children.set(c.name, child)
      await waitUntilAnswers(c.readyUrl)
    }
  } catch (err) {
    await stop()
    throw err
  }
  return { children, stop }
}

/** The components of the service, in start order, for a configuration's ports. */
export function serviceComponents(cfg: {
  host: string
  ports: { appsSubgraph: number; actorsSubgraph: number; paymentsSubgraph: number; gateway: number; api: number; checkout: number }
}): Component[] {
  const at = (port: number, path: string) => `http://${cfg.host}:${port}${path}`
  return [
    { name: 'apps', entry: 'services/apps/src/main.ts', readyUrl: at(cfg.ports.appsSubgraph, '/graphql') },
    { name: 'actors', entry: 'services/actors/src/main.ts', readyUrl: at(cfg.ports.actorsSubgraph, '/graphql') },
    { name: 'payments', entry: 'services/payments/src/main.ts', readyUrl: at(cfg.ports.paymentsSubgraph, '/graphql') },
    { name: 'gateway', entry: 'gateway/src/main.ts', readyUrl: at(cfg.ports.gateway, '/health') },
    { name: 'xrpc-adapter', entry: 'xrpc-adapter/src/main.ts', readyUrl: at(cfg.ports.checkout, '/health') },
  ]
}
