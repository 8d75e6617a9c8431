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

it('ending an actor\'s sessions ends its sessions and unused links in that environment, no one else\'s; a new link signs in', async () => {
  const sessions = createDashboardSessions({ redis, prefix: `${iso.redisPrefix}c:` })
  const live = { ...who, environment: 'live' as const }
  const other = { ...who, actorDid: 'did:plc:signin1111111111111111111' }
  const [signedIn, inLive, someoneElse] = await Promise.all([sessions.createSession(who), sessions.createSession(live), sessions.createSession(other)])
  const { token: unused } = await sessions.issueLoginLink(who)
  const { token: peeked } = await sessions.issueLoginLink(who)
  expect(await sessions.peekLoginLink(peeked)).toEqual(who)

  await sessions.endSessions(who)
  expect(await sessions.getSession(signedIn.cookie)).toBeNull()
  expect(await sessions.peekLoginLink(peeked)).toBeNull()
  expect(await sessions.redeemLoginLink(unused)).toBeNull()
  expect(await sessions.getSession(inLive.cookie)).toMatchObject(live)
  expect(await sessions.getSession(someoneElse.cookie)).toMatchObject(other)

  const { token } = await sessions.issueLoginLink(who)
  const again = await sessions.redeemLoginLink(token)
  expect(await sessions.getSession(again!.cookie)).toMatchObject(who)
  // ended again: also the session made after the first end
  await sessions.endSessions(who)
  expect(await sessions.getSession(again!.cookie)).toBeNull()
})

it('a link issued before an end opens no lasting session, even when redeemed while the end happens', async () => {
  const sessions = createDashboardSessions({ redis, prefix: `${iso.redisPrefix}d:` })
  const { token } = await sessions.issueLoginLink(who)
  const [started] = await Promise.all([sessions.redeemLoginLink(token), sessions.endSessions(who)])
  // redeemed before the end, after it, or in between: the session carries the link's generation, so it is ended
  expect(started ? await sessions.getSession(started.cookie) : null).toBeNull()
})

it('a session stored before sign-out generations (no generation) counts as the first: ended by an end', async () => {
  const sessions = createDashboardSessions({ redis, prefix: `${iso.redisPrefix}e:` })
  const { cookie, session } = await sessions.createSession(who)
  const key = (await redis.keys(`${iso.redisPrefix}e:session:*`))[0]!
  const { generation: _, ...old } = session
  await redis.set(key, JSON.stringify(old), 'EX', 60)
  expect(await sessions.getSession(cookie)).toMatchObject(who)
  await sessions.endSessions(who)
  expect(await sessions.getSession(cookie)).toBeNull()
})
