/**
 * docker-compose.yml cannot run here (no Docker engine), so it is validated: it must name every
 * deployable workspace (a workspace with src/main.ts), run mongo:7 and redis:7 without eviction,
 * give every component the settings its configuration needs, and start each as node itself under an init, so a
 * SIGTERM reaches it (one component is started here exactly as compose starts it, and stopped so).
 */
import { spawn } from 'node:child_process'
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { loadConfig } from '@svc/config'
import { processorTimeoutOf, resolveTimeoutOf } from '@svc/payments/src/domain/context'
import { freePort, isolate } from '@svc/testing'

const root = join(__dirname, '..')
const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<
    string,
    {
      image?: string
      build?: string
      init?: boolean
      working_dir?: string
      stop_grace_period?: string
      restart?: string
      command?: string[]
      environment?: Record<string, string>
      depends_on?: string[] | Record<string, unknown>
      ports?: string[]
    }
  >
}

const dependsOn = (service: string): string[] => {
  const deps = compose.services[service]?.depends_on ?? []
  return Array.isArray(deps) ? deps : Object.keys(deps)
}

function deployableWorkspaces(): { name: string; dir: string }[] {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { workspaces: string[] }
  const dirs = pkg.workspaces.flatMap((w) =>
    w.endsWith('/*') ? readdirSync(join(root, w.slice(0, -2))).map((d) => join(w.slice(0, -2), d)) : [w],
  )
  return dirs
    .filter((dir) => existsSync(join(root, dir, 'src', 'main.ts')))
    .map((dir) => ({ dir, name: (JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { name: string }).name }))
}

describe('docker-compose.yml', () => {
  test('finds the deployable workspaces (guards the check below against finding none)', () => {
    expect(deployableWorkspaces().map((w) => w.name).sort()).toEqual(
      expect.arrayContaining(['@svc/apps', '@svc/actors', '@svc/payments', '@svc/events', '@svc/tickets', '@svc/gateway', '@svc/xrpc-adapter']),
    )
  })

  test.each(deployableWorkspaces())('runs $name', ({ dir }) => {
    const service = Object.values(compose.services).find((s) => s.working_dir === `/app/${dir}` && s.command?.at(-1) === 'src/main.ts')
    expect(service).toBeDefined()
    // what `npm run start` runs, started as node itself (signals: below)
    const startScript = (JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start
    expect(startScript).toBe('tsx src/main.ts')
    expect(service?.command).toEqual(['node', '--import', 'tsx', 'src/main.ts'])
    // its secrets: test/process-secrets.test.ts
    for (const key of ['MONGO_URL', 'REDIS_URL', 'SERVICE_DID', 'NODE_ENV']) {
      expect(service?.environment).toHaveProperty(key)
    }
    expect(service?.environment?.NODE_ENV).toBe('production')
  })

  test("every component runs as node itself under Docker's init, so a SIGTERM (docker stop, a rolling deploy) reaches it", () => {
    const components = Object.entries(compose.services).filter(([, s]) => s.build !== undefined)
    expect(components.length).toBeGreaterThanOrEqual(9)
    for (const [name, s] of components) expect([name, s.init, s.command?.slice(0, 3)]).toEqual([name, true, ['node', '--import', 'tsx']])
  })

  test('every service is started again when it exits (a process exits 1 when it cannot start, and a stop that overran)', () => {
    for (const [name, s] of Object.entries(compose.services)) expect([name, s.restart]).toEqual([name, 'unless-stopped'])
  })

  test('the gateway starts once every subgraph answers, and the adapter once the gateway is ready', () => {
    const gateway = compose.services.gateway?.depends_on as Record<string, { condition: string }>
    expect(Object.keys(gateway).sort()).toEqual(['actors', 'apps', 'events', 'payments', 'tickets'])
    for (const dep of Object.values(gateway)) expect(dep.condition).toBe('service_healthy')
    expect((compose.services['xrpc-adapter']?.depends_on as Record<string, { condition: string }>).gateway?.condition).toBe('service_healthy')
  })

  test('a component started as compose starts it stops on a SIGTERM to its own process: finishes, says so, exits 0', async () => {
    const board = compose.services.board!
    const { redisUrl, redisPrefix } = isolate('compose-signal')
    const child = spawn(board.command![0]!, board.command!.slice(1), {
      cwd: join(root, board.working_dir!.replace(/^\/app\//, '')),
      env: { ...process.env, NODE_ENV: 'development', REDIS_URL: redisUrl, REDIS_PREFIX: redisPrefix, BOARD_PORT: String(await freePort()), HOST: '127.0.0.1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => void (out += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => void (out += chunk.toString()))
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    try {
      const deadline = Date.now() + 60_000
      while (!out.includes('Server listening') && Date.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 100))
      expect(out).toContain('Server listening')
      // the process alone, as Docker's init passes it on: not its process group
      child.kill('SIGTERM')
      expect(await exited).toBe(0)
      expect(out).toContain('"msg":"stopped"')
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    }
  }, 90_000)

  test("a stop waits out a pay under way: the stop budget covers the processor's charge and the question after it, and compose's grace the budget", () => {
    const payments = { models: {} } as Parameters<typeof processorTimeoutOf>[0]
    const budget = loadConfig({}).shutdownTimeoutMs
    expect(budget).toBeGreaterThanOrEqual(processorTimeoutOf(payments) + resolveTimeoutOf(payments))
    for (const [name, s] of Object.entries(compose.services).filter(([, s]) => s.build !== undefined && s.stop_grace_period !== undefined)) {
      expect([name, Number(/^(\d+)s$/.exec(s.stop_grace_period!)?.[1]) * 1000]).toEqual([name, budget + 5000])
    }
  })

  test('uses mongo:7 and redis:7 with noeviction', () => {
    expect(compose.services.mongo?.image).toBe('mongo:7')
    expect(compose.services.redis?.image).toBe('redis:7')
    const cmd = compose.services.redis?.command ?? []
    expect(cmd[cmd.indexOf('--maxmemory-policy') + 1]).toBe('noeviction')
  })

  test('points each component at the others by service name', () => {
    const env = compose.services['xrpc-adapter']?.environment ?? {}
    expect(env.MONGO_URL).toBe('mongodb://mongo:27017/svc')
    expect(env.REDIS_URL).toBe('redis://redis:6379/0')
    expect(env.GATEWAY_URL).toBe('http://gateway:4100/graphql')
    expect(compose.services.gateway?.environment?.APPS_SUBGRAPH_URL).toBe('http://apps:4201/graphql')
    expect(compose.services.gateway?.environment?.ACTORS_SUBGRAPH_URL).toBe('http://actors:4202/graphql')
    expect(compose.services.gateway?.environment?.PAYMENTS_SUBGRAPH_URL).toBe('http://payments:4203/graphql')
    expect(compose.services.gateway?.environment?.EVENTS_SUBGRAPH_URL).toBe('http://events:4204/graphql')
    expect(compose.services.gateway?.environment?.TICKETS_SUBGRAPH_URL).toBe('http://tickets:4205/graphql')
    expect(compose.services.events?.environment?.EVENTS_SUBGRAPH_PORT).toBe('4204')
    expect(dependsOn('gateway')).toEqual(expect.arrayContaining(['apps', 'actors', 'payments', 'events', 'tickets']))
    // the apps, payments and tickets outbox relays publish to Redis
    for (const service of ['apps', 'payments', 'tickets', 'events']) expect(dependsOn(service)).toContain('redis')
  })

  test('runs the events workers and the operators board from @svc/events scripts', () => {
    const scripts = (JSON.parse(readFileSync(join(root, 'services', 'events', 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts
    expect(scripts.workers).toBe('tsx src/workers/main.ts')
    expect(scripts.board).toBe('tsx src/board/main.ts')
    expect(compose.services.workers).toMatchObject({ working_dir: '/app/services/events', command: ['node', '--import', 'tsx', 'src/workers/main.ts'] })
    expect(compose.services.board).toMatchObject({ working_dir: '/app/services/events', command: ['node', '--import', 'tsx', 'src/board/main.ts'] })
    for (const service of ['workers', 'board']) {
      const env = compose.services[service]?.environment ?? {}
      expect(env.NODE_ENV).toBe('production')
      expect(env.REDIS_URL).toBe('redis://redis:6379/0')
      for (const key of ['MONGO_URL', 'SERVICE_DID']) expect(env).toHaveProperty(key)
    }
    // the workers look endpoints up through the gateway
    expect(compose.services.workers?.environment?.GATEWAY_URL).toBe('http://gateway:4100/graphql')
    expect(dependsOn('workers')).toEqual(expect.arrayContaining(['mongo', 'redis', 'gateway']))
    expect(compose.services.board?.environment?.BOARD_PORT).toBe('4300')
    expect(compose.services.board?.ports).toEqual(['127.0.0.1:4300:4300'])
  })
})

describe('Dockerfile', () => {
  // the image installs with NODE_ENV=production, which leaves devDependencies out: whatever runs a component must not be one
  const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8')
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> }

  test('installs for production (devDependencies left out)', () => {
    expect(dockerfile).toMatch(/ENV NODE_ENV=production[\s\S]*RUN npm ci\b/)
    expect(dockerfile).not.toMatch(/--include=dev/)
  })

  test.each(deployableWorkspaces())('the programs $name is started with are installed in the image', ({ dir }) => {
    const scripts = (JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as { scripts?: Record<string, string> }).scripts ?? {}
    const programs = new Set(Object.entries(scripts).filter(([name]) => ['start', 'workers', 'board'].includes(name)).map(([, cmd]) => cmd.split(' ')[0]!))
    expect(programs.size).toBeGreaterThan(0)
    for (const program of programs) {
      expect([program, lock.packages[`node_modules/${program}`]]).toEqual([program, expect.anything()])
      expect([program, lock.packages[`node_modules/${program}`]?.dev ?? false]).toEqual([program, false])
    }
  })
})
