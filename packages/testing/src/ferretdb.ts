/**
 * Starts a FerretDB 1.24.2 (the MongoDB wire protocol) for tests, benchmarks and the dev command, on the machine's
 * PostgreSQL when one answers (PG_URL, default postgres://postgres@127.0.0.1:5432/postgres) and on SQLite otherwise
 * (docs/performance.md: PostgreSQL is several times faster for this service's writes and filtered reads).
 * The binary is built once per machine by scripts/setup.sh into a cache folder outside the repo.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, existsSync, mkdirSync, rmSync } from 'node:fs'
import { createConnection, createServer } from 'node:net'
import { createInterface } from 'node:readline'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import pg from 'pg'

export const FERRETDB_VERSION = 'v1.24.2'

export function ferretDbBinary(env: Record<string, string | undefined> = process.env): string {
  const cache = env.SVC_CACHE_DIR ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'svc-ferretdb')
  return env.FERRETDB_BIN ?? join(cache, FERRETDB_VERSION, 'ferretdb')
}

/**
 * A port free now, for a server that listens on it later. Under jest, each worker takes its ports in turn from a slice
 * of its own below Linux's ephemeral range (32768 up): jest runs two test files at once, and a port the OS gave one
 * worker (listen on 0, closed) could be given to the other's listen on 0 before the first bound it. Elsewhere (the
 * dev command, the bench) the OS picks one.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const worker = Number(process.env.JEST_WORKER_ID)
  if (!(worker >= 1)) return listenOnce(host, 0)
  const first = WORKER_PORTS_FROM + ((worker - 1) % WORKER_SLICES) * WORKER_SLICE
  for (let tried = 0; tried < WORKER_SLICE; tried++) {
    const port = first + (nextInSlice++ % WORKER_SLICE)
    // taken (a server of this file still on it, or a service of the machine): the next one
    const free = await listenOnce(host, port).then(() => true, () => false)
    if (free) return port
  }
  throw new Error(`no free port in ${first}-${first + WORKER_SLICE - 1}`)
}
/** jest workers' port slices: 8 of 1,500 from 20000, below the ephemeral ports the OS gives a listen on 0 */
const WORKER_PORTS_FROM = 20_000
const WORKER_SLICE = 1_500
const WORKER_SLICES = 8
let nextInSlice = Math.floor(Math.random() * WORKER_SLICE)

/** Listens on `port` (0: one the OS picks) and closes again, answering the port. */
function listenOnce(host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.once('error', reject)
    srv.listen(port, host, () => {
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

/** The PostgreSQL FerretDB stores its data in, when one answers; any database of it serves to create FerretDB's own. */
export const DEFAULT_PG_URL = 'postgres://postgres@127.0.0.1:5432/postgres'

export type FerretBackend = 'postgresql' | 'sqlite'

/** The admin URL to use (PG_URL or the default), or null when no PostgreSQL answers there (or FERRETDB_BACKEND=sqlite). */
export async function postgresForFerret(env: Record<string, string | undefined> = process.env): Promise<string | null> {
  if (env.FERRETDB_BACKEND === 'sqlite') return null
  const url = env.PG_URL ?? DEFAULT_PG_URL
  try {
    await adminQuery(url, 'SELECT 1', [], 2000)
    return url
  } catch (err) {
    if (env.FERRETDB_BACKEND === 'postgresql') throw new Error(`FERRETDB_BACKEND=postgresql but no PostgreSQL answers at ${redactUrl(url)}: ${String(err)}`)
    return null
  }
}

/** A URL as printed: its password masked. */
export function redactUrl(url: string): string {
  const u = new URL(url)
  if (u.password) u.password = '***'
  return u.toString()
}

/** `url` with its database replaced. */
function withDatabase(url: string, database: string): string {
  const u = new URL(url)
  u.pathname = `/${database}`
  return u.toString()
}

/**
 * At most this many PostgreSQL connections per FerretDB (its own default is 50): the test run's and the fault run's
 * each start one, and PostgreSQL's default max_connections is 100 (a clean-clone run reached 99, and one with other
 * tests running beside it failed on "too many clients already"). Two cores need no more, except after a restart
 * under load (FERRETDB_RESTART_PG_POOL).
 */
const FERRETDB_PG_POOL = 25
/**
 * A FerretDB restarted under load (the fault run's) keeps its own default of 50: with 25, the fault run's FerretDB
 * hung for good after its restart twice out of three runs (every PostgreSQL connection idle, a ping unanswered), as
 * pools do when each request holds a connection while waiting for another (here, it seems, FerretDB's metadata
 * reload after a start, under the burst of every process reconnecting).
 */
export const FERRETDB_RESTART_PG_POOL = 50

function withPool(url: string, pool: number): string {
  const u = new URL(url)
  u.searchParams.set('pool_max_conns', String(pool))
  return u.toString()
}

/** One statement on its own connection (these run a few times per start, never per request). */
async function adminQuery<R extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = [], timeoutMs = 5000): Promise<R[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs })
  await client.connect()
  try {
    return (await client.query<R>(sql, params)).rows
  } finally {
    await client.end().catch(() => undefined)
  }
}

/**
 * FerretDB 1.24 on PostgreSQL pushes an equality filter down as `_jsonb->'field' @> value`, which the btree indexes
 * it creates for the models' indexes (and `_id`) cannot serve: every such read and update scanned the whole table.
 * An event trigger gives each of those btree indexes a GIN `jsonb_path_ops` companion on the same expressions, which
 * serves `@>`; the database's `plan_cache_mode = force_custom_plan` lets the planner see the field name (FerretDB
 * sends it as a bind parameter, and a generic plan cannot match it to an index expression). Indexes made before the
 * trigger (a kept dev database) get theirs when this runs. Measured on 100,000 documents: a find or update by `_id`
 * or by a unique field from about 66 ms to about 1.3 ms (docs/performance.md). The companions skip GIN's pending list
 * (`fastupdate = off`): with it, every search also scanned the entries inserted since the last vacuum, which after
 * 100,000 inserts made a lookup by `_id` 4.9 ms instead of 1.1 ms; an insert adds one key per companion either way.
 */
const GIN_COMPANIONS_SQL = `
CREATE OR REPLACE FUNCTION svc_gin_companions_of(index_oid oid) RETURNS void LANGUAGE plpgsql AS $fn$
DECLARE
  am text;
  tbl regclass;
  columns int;
  expr text;
BEGIN
  SELECT a.amname, x.indrelid::regclass, x.indnatts INTO am, tbl, columns
    FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am a ON a.oid = c.relam
    WHERE x.indexrelid = index_oid;
  IF am IS DISTINCT FROM 'btree' THEN RETURN; END IF;
  FOR i IN 1..columns LOOP
    expr := pg_get_indexdef(index_oid, i, false);
    CONTINUE WHEN expr !~ '^\\(*_jsonb -> ''[^'']+''::text\\)*$';
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %s USING gin ((%s) jsonb_path_ops) WITH (fastupdate = off)', 'svcgin_' || md5(tbl::text || expr), tbl, expr);
  END LOOP;
END
$fn$;
CREATE OR REPLACE FUNCTION svc_gin_companions() RETURNS event_trigger LANGUAGE plpgsql AS $fn$
DECLARE
  cmd record;
BEGIN
  FOR cmd IN SELECT objid FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE INDEX' LOOP
    PERFORM svc_gin_companions_of(cmd.objid);
  END LOOP;
END
$fn$;
DROP EVENT TRIGGER IF EXISTS svc_gin_companions;
CREATE EVENT TRIGGER svc_gin_companions ON ddl_command_end WHEN TAG IN ('CREATE INDEX') EXECUTE FUNCTION svc_gin_companions();
SELECT svc_gin_companions_of(x.indexrelid) FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid JOIN pg_am a ON a.oid = c.relam
  JOIN pg_namespace n ON n.oid = c.relnamespace WHERE a.amname = 'btree' AND n.nspname NOT IN ('pg_catalog', 'information_schema');
`

const DATABASE_NAME_RE = /^[a-z_][a-z0-9_]{0,62}$/

/** Creates the PostgreSQL database unless it exists. */
async function ensureDatabase(adminUrl: string, database: string): Promise<void> {
  if (!DATABASE_NAME_RE.test(database)) throw new Error(`not a database name for FerretDB: ${database}`)
  try {
    await adminQuery(adminUrl, `CREATE DATABASE "${database}"`)
  } catch (err) {
    if ((err as { code?: string }).code !== '42P04') throw err // duplicate_database: kept from an earlier run
  }
  await adminQuery(adminUrl, `ALTER DATABASE "${database}" SET plan_cache_mode = force_custom_plan`)
  await adminQuery(withDatabase(adminUrl, database), GIN_COMPANIONS_SQL)
}

export async function dropDatabase(adminUrl: string, database: string): Promise<void> {
  if (!DATABASE_NAME_RE.test(database)) throw new Error(`not a database name for FerretDB: ${database}`)
  await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`)
}

/**
 * Drops the databases that runs killed before their teardown left: `<prefix><pid>_…` of a process that is gone.
 * Only names this module makes are touched.
 */
export async function dropAbandonedDatabases(adminUrl: string, prefix: string): Promise<string[]> {
  const rows = await adminQuery<{ datname: string }>(adminUrl, 'SELECT datname FROM pg_database WHERE datname LIKE $1', [`${prefix}%`])
  const dropped: string[] = []
  for (const { datname: name } of rows) {
    const pid = Number(/^(\d+)_[0-9a-f]{8}$/.exec(name.slice(prefix.length))?.[1] ?? NaN)
    if (!Number.isInteger(pid) || processAlive(pid)) continue
    await dropDatabase(adminUrl, name)
    dropped.push(name)
  }
  return dropped
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as { code?: string }).code === 'EPERM'
  }
}

export interface RunningFerretDb {
  url: string
  port: number
  /** FerretDB's state folder (and, on SQLite, its data) */
  dataDir: string
  backend: FerretBackend
  /** the PostgreSQL database holding the data (postgresql backend) */
  pgDatabase: string | null
  /** FerretDB's Prometheus metrics (with `metrics: true`): its commands counted by name (ferretDbCommandCounts) */
  metricsUrl: string | null
  process: ChildProcess
  /** SIGTERM for data that is kept; SIGKILL is fine for temporary data (its folder or database is removed) */
  stop(signal?: NodeJS.Signals): Promise<void>
}

export interface FerretDbOptions {
  /** FerretDB's state folder (on SQLite also its data); temporary when absent */
  dataDir?: string
  port?: number
  /** remove the data on stop (default: when no dataDir is given) */
  temporary?: boolean
  /**
   * The PostgreSQL database to keep the data in (postgresql backend); default a new one per start,
   * `<databasePrefix><pid>_<random>`, dropped on stop when temporary
   */
  pgDatabase?: string
  /** default `svc_ferret_` */
  databasePrefix?: string
  /** say which backend was chosen, and why, on stdout (the dev command and the bench) */
  announce?: boolean
  /** serve FerretDB's metrics on a free loopback port (`metricsUrl`) */
  metrics?: boolean
  /** its PostgreSQL connections at most (default 25; FERRETDB_RESTART_PG_POOL for one restarted under load) */
  pgPool?: number
}

export async function startFerretDb(opts: FerretDbOptions = {}): Promise<RunningFerretDb> {
  const bin = ferretDbBinary()
  if (!existsSync(bin)) throw new Error(`FerretDB binary missing at ${bin}: run \`bash scripts/setup.sh\` first`)
  const temporary = opts.temporary ?? !opts.dataDir
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'svc-ferretdb-'))
  mkdirSync(dataDir, { recursive: true })
  const port = opts.port ?? (await freePort())
  const adminUrl = await postgresForFerret()
  const prefix = opts.databasePrefix ?? 'svc_ferret_'
  const pgDatabase = adminUrl ? (opts.pgDatabase ?? `${prefix}${process.pid}_${randomBytes(4).toString('hex')}`) : null
  if (adminUrl && pgDatabase) {
    if (!opts.pgDatabase) await dropAbandonedDatabases(adminUrl, prefix)
    await ensureDatabase(adminUrl, pgDatabase)
    if (opts.announce) process.stdout.write(`FerretDB on PostgreSQL ${redactUrl(withDatabase(adminUrl, pgDatabase))}\n`)
  } else {
    // one line, always: the SQLite backend is much slower, and whoever reads figures should know it was used
    process.stdout.write(
      `FerretDB on SQLite in ${dataDir}: ${process.env.FERRETDB_BACKEND === 'sqlite' ? 'FERRETDB_BACKEND=sqlite' : `no PostgreSQL answers at ${redactUrl(process.env.PG_URL ?? DEFAULT_PG_URL)} (set PG_URL)`}\n`,
    )
  }
  const backendArgs =
    adminUrl && pgDatabase ? ['--handler=postgresql', `--postgresql-url=${withPool(withDatabase(adminUrl, pgDatabase), opts.pgPool ?? FERRETDB_PG_POOL)}`] : ['--handler=sqlite', `--sqlite-url=file:${dataDir}/`]
  const metricsPort = opts.metrics ? await freePort() : null
  const child = spawn(
    bin,
    [
      ...backendArgs,
      `--listen-addr=127.0.0.1:${port}`,
      `--state-dir=${dataDir}`,
      metricsPort ? `--debug-addr=127.0.0.1:${metricsPort}` : '--debug-addr=-',
      '--telemetry=disable',
      '--log-level=error',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  // On PostgreSQL FerretDB logs every unique-index refusal at ERROR, with the document; the service relies on those
  // refusals (its idempotency and capacity rules), so they are expected and not shown. Anything else is.
  createInterface({ input: child.stderr! }).on('line', (line) => {
    if (!line.includes('"Code":"23505"')) process.stderr.write(`${line}\n`)
  })
  let exited = false
  child.once('exit', () => (exited = true))
  await waitForPort(port)
  return {
    url: `mongodb://127.0.0.1:${port}/`,
    port,
    dataDir,
    backend: pgDatabase ? 'postgresql' : 'sqlite',
    pgDatabase,
    metricsUrl: metricsPort ? `http://127.0.0.1:${metricsPort}/debug/metrics` : null,
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
      if (temporary) {
        rmSync(dataDir, { recursive: true, force: true })
        if (adminUrl && pgDatabase) await dropDatabase(adminUrl, pgDatabase)
      }
    },
  }
}

/** Connection upkeep the drivers send on their own (handshakes, heartbeats, sessions): not the service's work. */
const UPKEEP_COMMANDS = new Set(['hello', 'ismaster', 'isMaster', 'ping', 'endSessions', 'saslStart', 'saslContinue', 'buildInfo', 'getParameter', 'unknown'])

/** The data commands FerretDB has answered since it started, by command name (find, insert, update, …). */
export async function ferretDbCommandCounts(metricsUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(metricsUrl)).text()
  const counts: Record<string, number> = {}
  for (const m of text.matchAll(/^ferretdb_client_requests_total\{command="([^"]+)",opcode="[^"]+"\} (\d+)$/gm)) {
    const command = m[1]!
    if (!UPKEEP_COMMANDS.has(command)) counts[command] = (counts[command] ?? 0) + Number(m[2])
  }
  return counts
}

/**
 * A FerretDB whose PostgreSQL cannot be reached (its URL names a closed port): it accepts connections and answers
 * every command that needs its backend with an `InternalError`, as it does while PostgreSQL restarts or refuses
 * clients ("too many clients already"). For the tests of how the service takes that answer.
 */
export async function startFerretDbWithoutBackend(): Promise<{ url: string; stop(): Promise<void> }> {
  const closedPort = await freePort()
  const port = await freePort()
  const stateDir = mkdtempSync(join(tmpdir(), 'svc-ferretdb-nobackend-'))
  const child = spawn(
    ferretDbBinary(),
    [
      '--handler=postgresql',
      `--postgresql-url=postgres://postgres@127.0.0.1:${closedPort}/none`,
      `--listen-addr=127.0.0.1:${port}`,
      `--state-dir=${stateDir}`,
      '--debug-addr=-',
      '--telemetry=disable',
    ],
    { stdio: 'ignore' },
  )
  await waitForPort(port)
  return {
    url: `mongodb://127.0.0.1:${port}/`,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGKILL')
        await exited
      }
      rmSync(stateDir, { recursive: true, force: true })
    },
  }
}
