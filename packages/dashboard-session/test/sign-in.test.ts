/**
 * Sign-in links against the real Redis: a link opens one session, also when redeemed many times at once, and a
 * redeem that fails before its session exists (Redis away for that write) leaves the link for the retry.
 */
import Redis from 'ioredis'
import { isolate } from '@svc/testing/src/isolation'
import { createDashboardSessions } from '../src'

const iso = isolate('dashboard_sign_in')
let redis: Redis

beforeAll(() => {
  redis = new Redis(iso.redisUrl, { maxRetriesPerRequest: null })
})
afterAll(async () => {
  const keys = await redis.keys(`${iso.redisPrefix}*`)
  if (keys.length) await redis.del(...keys)
  redis.disconnect()
})

const who = { actorDid: 'did:plc:signin0000000000000000000', environment: 'test' as const }

it('20 redeems of one link at once: one session, the others nothing', async () => {
  const sessions = createDashboardSessions({ redis, prefix: `${iso.redisPrefix}a:` })
  const { token } = await sessions.issueLoginLink(who)
  const results = await Promise.all(Array.from({ length: 20 }, () => sessions.redeemLoginLink(token)))
  const started = results.filter((r) => r !== null)
  expect(started).toHaveLength(1)
  expect(await sessions.getSession(started[0]!.cookie)).toMatchObject(who)
  // the losers' sessions were removed: only the winner's is left
  expect(await redis.keys(`${iso.redisPrefix}a:session:*`)).toHaveLength(1)
  expect(await sessions.redeemLoginLink(token)).toBeNull()
})

it('a redeem whose session could not be written leaves the link: the retry signs in', async () => {
  let failures = 1
  // the same Redis, whose next SET fails as while it restarts
  const flaky = new Proxy(redis, {
    get(target, prop, receiver) {
      if (prop === 'set' && failures-- > 0) return () => Promise.reject(new Error('Connection is closed.'))
      const value = Reflect.get(target, prop, receiver) as unknown
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  const sessions = createDashboardSessions({ redis: flaky, prefix: `${iso.redisPrefix}b:` })
  const { token } = await createDashboardSessions({ redis, prefix: `${iso.redisPrefix}b:` }).issueLoginLink(who)
  await expect(sessions.redeemLoginLink(token)).rejects.toThrow('Connection is closed.')
  const started = await sessions.redeemLoginLink(token)
  expect(started).not.toBeNull()
  expect(await sessions.getSession(started!.cookie)).toMatchObject(who)
  expect(await sessions.redeemLoginLink(token)).toBeNull()
})
