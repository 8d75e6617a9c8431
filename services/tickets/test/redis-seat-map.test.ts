/**
 * The seat map in the test Redis: what a read answers before and after it is built, what writes change, and that a
 * rebuild whose read of the units overlaps seats being taken and freed ends with the units' truth, repairing the map
 * left wrong by a process that stopped between a unit's write and the map's.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Redis from 'ioredis'
import { freePort, waitForPort } from '@svc/testing'
import { isolate } from '@svc/testing/src/isolation'
import { KEPT_UNTIL } from '../src/domain/capacity'
import { setSeats, type TakenUnit } from '../src/domain/seat-map'
import { createRedisSeatMap, type RedisSeatMap } from '../src/redis-seat-map'

const { redisUrl, redisPrefix } = isolate('seat-map')
let map: RedisSeatMap
let redis: Redis
let tiers = 0
const newTier = () => `tier_${String(++tiers).padStart(24, '0')}`
// the real clock's minute: reads mark a tier read lately by it, and stale() judges that by the real clock
const now = new Date(Math.floor(Date.now() / 60_000) * 60_000)
const later = (s: number) => new Date(now.getTime() + s * 1000)

const unit = (tierId: string, n: number, reservationId = 'hold_a', expiresAt = KEPT_UNTIL): TakenUnit => ({ unit: `${tierId}#${n}`, reservationId, expiresAt })

async function taken(tierId: string): Promise<number[]> {
  const state = await map.read(tierId, now)
  if (!state) throw new Error('the map is not built')
  return [...setSeats(state.taken, 1_000_000)].sort((a, b) => a - b)
}

beforeAll(() => {
  map = createRedisSeatMap({ redisUrl, redisPrefix, reconcileMs: 60_000 })
  redis = new Redis(redisUrl)
})
afterAll(async () => {
  const keys = await redis.keys(`${redisPrefix}*`)
  if (keys.length) await redis.del(...keys)
  await map.close()
  redis.disconnect()
})

test('unbuilt, a read answers null; built from the units, it answers their seats and follows every write', async () => {
  const tier = newTier()
  expect(await map.read(tier, now)).toBeNull()
  // writes before the build are kept in the map, and the build starts from the units
  await map.took(tier, [40])
  expect(await map.rebuild(tier, async () => [unit(tier, 3), unit(tier, 17)])).toHaveLength(2)
  expect(await taken(tier)).toEqual([3, 17])
  await map.took(tier, [5, 6])
  await map.freed(tier, [3])
  expect(await taken(tier)).toEqual([5, 6, 17])
  await map.freed(tier, [5, 6, 17])
  expect(await taken(tier)).toEqual([])
})

test('the reservations holding seats are due once their time has passed, until they end', async () => {
  const tier = newTier()
  await map.rebuild(tier, async () => [unit(tier, 1, 'hold_old', later(-5)), unit(tier, 2, 'hold_kept')])
  await map.holding(tier, 'hold_new', later(60))
  expect((await map.read(tier, now))!.due).toEqual(['hold_old'])
  expect((await map.read(tier, later(61)))!.due).toEqual(['hold_old', 'hold_new'])
  await map.ended(tier, ['hold_old'])
  expect((await map.read(tier, later(61)))!.due).toEqual(['hold_new'])
})

test('a rebuild ends with the truth: seats taken or freed during its read count, drift from a stopped process is repaired', async () => {
  const tier = newTier()
  await map.rebuild(tier, async () => [unit(tier, 1), unit(tier, 2)])
  // a stopped process left the map wrong both ways: seat 9 marked without a unit, seat 4's unit not marked
  await map.took(tier, [9])
  const truth = [unit(tier, 1), unit(tier, 2), unit(tier, 4)]
  const units = await map.rebuild(tier, async () => {
    // the read sees seats 1, 2 and 4; meanwhile seat 7 is taken and seat 1 freed (its unit deleted after the read)
    await map.took(tier, [7])
    await map.freed(tier, [1])
    return truth
  })
  expect(units).toEqual(truth)
  expect(await taken(tier)).toEqual([2, 4, 7])
})

test('one rebuild of a tier at a time; the other reader is told to read the units itself', async () => {
  const tier = newTier()
  let release!: () => void
  let reading!: () => void
  // the slow rebuild reads the units once it holds the tier's rebuild: the second starts only then
  const lockHeld = new Promise<void>((resolve) => (reading = resolve))
  const slow = map.rebuild(tier, () => {
    reading()
    return new Promise<TakenUnit[]>((resolve) => (release = () => resolve([unit(tier, 0)])))
  })
  await lockHeld
  expect(await map.rebuild(tier, async () => [])).toBeNull()
  release()
  expect(await slow).toHaveLength(1)
  expect(await taken(tier)).toEqual([0])
})

test('a failed read of the units leaves the map unbuilt and frees the rebuild for the next reader', async () => {
  const tier = newTier()
  await expect(map.rebuild(tier, async () => Promise.reject(new Error('database away')))).rejects.toThrow('database away')
  expect(await map.read(tier, now)).toBeNull()
  expect(await map.rebuild(tier, async () => [unit(tier, 8)])).toHaveLength(1)
  expect(await taken(tier)).toEqual([8])
})

test('a rebuild that fails after the read of the units (Redis refusing its writes) frees the rebuild for the next reader', async () => {
  const tier = newTier()
  // the due set is a string for a moment: the rebuild's ZADD of the holds it read is refused
  const due = `${redisPrefix}seats:{${tier}}:due`
  await redis.set(due, 'in the way')
  await expect(map.rebuild(tier, async () => [unit(tier, 4, 'hold_a', later(60))])).rejects.toThrow(/WRONGTYPE/)
  await redis.del(due)
  expect(await map.read(tier, now)).toBeNull()
  expect(await map.rebuild(tier, async () => [unit(tier, 9)])).toHaveLength(1)
  expect(await taken(tier)).toEqual([9])
})

test('a tier read lately is stale once its last rebuild is older than the reconcile period, and fresh after one', async () => {
  const tier = newTier()
  const quick = createRedisSeatMap({ redisUrl, redisPrefix, reconcileMs: 1 })
  try {
    await quick.rebuild(tier, async () => [])
    await quick.read(tier, new Date())
    await new Promise((r) => setTimeout(r, 20))
    expect(await quick.stale()).toContain(tier)
    await map.rebuild(tier, async () => [])
    expect(await map.stale()).not.toContain(tier)
  } finally {
    await quick.close()
  }
})

test('every key of a tier\'s map expires when nobody reads it, `built` an hour before the seats it vouches for', async () => {
  const tier = newTier()
  await map.rebuild(tier, async () => [unit(tier, 1, 'hold_a', later(60))])
  await map.holding(tier, 'hold_b', later(60))
  await map.took(tier, [2])
  await map.freed(tier, [1])
  await map.read(tier, now)
  const keys = await redis.keys(`${redisPrefix}seats:{${tier}}:*`)
  expect(keys.map((k) => k.slice(k.lastIndexOf(':') + 1)).sort()).toEqual(['built', 'cleared', 'due', 'fresh', 'live', 'recent'])
  const ttl = Object.fromEntries(await Promise.all(keys.map(async (k) => [k.slice(k.lastIndexOf(':') + 1), await redis.pttl(k)] as const)))
  const week = 7 * 24 * 3600_000
  const built = ttl.built!
  expect(built).toBeGreaterThan(week - 60_000)
  expect(built).toBeLessThanOrEqual(week)
  for (const data of ['live', 'due', 'recent', 'cleared']) expect(ttl[data]).toBeGreaterThan(built + 3600_000 - 60_000)
})

test('a map that expired is rebuilt from the units by the next read, whatever bits outlived it', async () => {
  const tier = newTier()
  const brief = createRedisSeatMap({ redisUrl, redisPrefix, idleMs: 50 })
  try {
    await brief.rebuild(tier, async () => [unit(tier, 3)])
    expect((await brief.read(tier, now))?.taken).toBeDefined()
    await new Promise((r) => setTimeout(r, 120))
    expect(await brief.read(tier, now)).toBeNull()
    // rebuilt by a map of the usual idle time: one of 50 ms could expire again before the check reads it (a loaded
    // machine)
    await map.rebuild(tier, async () => [unit(tier, 5)])
    expect(await taken(tier)).toEqual([5])
  } finally {
    await brief.close()
  }
})

test("a Redis that cannot be reached is a structured warn line per failed reconnect (not ioredis's unhandled error event)", async () => {
  const lines: string[] = []
  const away = createRedisSeatMap({ redisUrl: `redis://127.0.0.1:${await freePort()}/0`, redisPrefix, logger: { warn: (_: object, msg: string) => void lines.push(msg) } as never })
  try {
    await expect(away.read(newTier(), now)).rejects.toThrow()
    expect(lines[0]).toBe('seat map: redis connection error')
  } finally {
    await away.close()
  }
})

describe('a Redis restarted from an older snapshot', () => {
  const dir = mkdtempSync(join(tmpdir(), 'seat-map-redis-'))
  let port: number
  let server: ChildProcess
  const startServer = async () => {
    // no saves of its own: the test takes the snapshot
    server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' })
    await waitForPort(port)
  }
  const killServer = () =>
    new Promise<void>((resolve) => {
      if (server.exitCode !== null || server.signalCode !== null) return resolve()
      server.once('exit', () => resolve())
      server.kill('SIGKILL')
    })
  beforeAll(async () => {
    port = await freePort()
    await startServer()
  })
  afterAll(async () => {
    await killServer()
    rmSync(dir, { recursive: true, force: true })
  })

  test('comes back with maps that show freed seats taken: the next sweep stops trusting them, and a read rebuilds them from the units', async () => {
    const own = createRedisSeatMap({ redisUrl: `redis://127.0.0.1:${port}/0`, redisPrefix })
    const admin = new Redis(`redis://127.0.0.1:${port}/0`, { maxRetriesPerRequest: 1 })
    admin.on('error', () => undefined)
    try {
      const tier = newTier()
      await own.rebuild(tier, async () => [unit(tier, 0), unit(tier, 1)])
      expect(await own.stale()).toEqual([]) // built just now, and the sweep learns the server's run_id
      await admin.save()
      // both seats are freed after the snapshot, then Redis dies and comes back with the snapshot
      await own.freed(tier, [0, 1])
      await killServer()
      await startServer()
      // read as the sweep's clock runs (the tier is read lately)
      const restored = await own.read(tier, new Date()).catch(async () => own.read(tier, new Date()))
      expect([...setSeats(restored!.taken, 10)]).toEqual([0, 1])
      // the sweep sees another server: every active tier is stale and unbuilt, so reads take the units
      expect(await own.stale()).toEqual([tier])
      expect(await own.read(tier, new Date())).toBeNull()
      expect(await own.rebuild(tier, async () => [])).toEqual([])
      expect([...setSeats((await own.read(tier, new Date()))!.taken, 10)]).toEqual([])
      // the same server at the next sweep: nothing more to do
      expect(await own.stale()).toEqual([])
    } finally {
      admin.disconnect()
      await own.close()
    }
  })
})
