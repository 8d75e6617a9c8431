/**
 * Starts a FerretDB 1.24.2 (MongoDB wire protocol over SQLite) for tests, benchmarks and the dev command.
 * The binary is built once per machine by scripts/setup.sh into a cache folder outside the repo.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, existsSync, mkdirSync, rmSync } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'

export const FERRETDB_VERSION = 'v1.24.2'

export function ferretDbBinary(env: Record<string, string | undefined> = process.env): string {
  const cache = env.SVC_CACHE_DIR ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'svc-ferretdb')
  return env.FERRETDB_BIN ?? join(cache, FERRETDB_VERSION, 'ferretdb')
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(0, host, () => {
      const addr = srv.address()
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))))
    })
  })
}

/**
 * A free port held open until `release()`, for a server that must listen on a port known before it starts (its URL is
 * given to others first): while held, no other server of the run (one listening on port 0) can be given it.
 */
export async function reservePort(host = '127.0.0.1'): Promise<{ port: number; release(): Promise<void> }> {
  const srv = createServer()
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject)
    srv.listen(0, host, () => resolve())
  })
  const addr = srv.address()
  if (typeof addr !== 'object' || !addr) throw new Error('no port')
  return { port: addr.port, release: () => new Promise<void>((resolve) => srv.close(() => resolve())) }
}

export async function waitForPort(port: number, host = '127.0.0.1', timeoutMs = 20000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host })
      socket.once('connect', () => (socket.destroy(), resolve(true)))
      socket.once('error', () => resolve(false))
    })
    if (ok) return
    if (Date.now() > deadline) throw new Error(`nothing listening on ${host}:${port} after ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

export interface RunningFerretDb {
  url: string
  port: number
  dataDir: string
  process: ChildProcess
  /** SIGTERM for a data folder that is kept; SIGKILL is fine for a temporary one */
  stop(signal?: NodeJS.Signals): Promise<void>
}

export async function startFerretDb(opts: { dataDir?: string; port?: number; temporary?: boolean; logFile?: string } = {}): Promise<RunningFerretDb> {
  const bin = ferretDbBinary()
  if (!existsSync(bin)) throw new Error(`FerretDB binary missing at ${bin}: run \`bash scripts/setup.sh\` first`)
  const temporary = opts.temporary ?? !opts.dataDir
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'svc-ferretdb-'))
  mkdirSync(dataDir, { recursive: true })
  const port = opts.port ?? (await freePort())
  const child = spawn(
    bin,
    [
      '--handler=sqlite',
      `--sqlite-url=file:${dataDir}/`,
      `--listen-addr=127.0.0.1:${port}`,
      `--state-dir=${dataDir}`,
      '--debug-addr=-',
      '--telemetry=disable',
      '--log-level=error',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  )
  let exited = false
  child.once('exit', () => (exited = true))
  await waitForPort(port)
  return {
    url: `mongodb://127.0.0.1:${port}/`,
    port,
    dataDir,
    process: child,
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      if (!exited) {
        const done = new Promise((r) => child.once('exit', r))
        child.kill(signal)
        let timer: NodeJS.Timeout | undefined
        await Promise.race([done, new Promise((r) => (timer = setTimeout(r, 5000)))])
        clearTimeout(timer)
        if (!exited) child.kill('SIGKILL')
      }
      if (temporary) rmSync(dataDir, { recursive: true, force: true })
    },
  }
}
