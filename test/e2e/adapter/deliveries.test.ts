/**
 * GET {checkout_url}/api/webhooks/atm: the delivery log of the key's app environment, newest first, with the status
 * filter and limit (1–100, default 20), every entry's exact shape (null where there is no value) and its attempt log
 * sorted by number; strict parameters (400 InvalidRequest); read-only (documents and jobs unchanged); and isolation:
 * a test key of app A never sees app B's deliveries or A's live ones.
 */
import type { Queue } from 'bullmq'
import type { DeliveryJob } from '@svc/events'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, updateConfig } from './helpers'
import { ALL_PERMISSIONS, closeQueue, deliveriesQueue, insertDelivery, listDeliveries, pushAttempt, snapshot, testEvent } from './events-helpers'

let stack: TestStack
let queue: Queue<DeliveryJob>

beforeAll(async () => {
  stack = await startStack('deliveries-list', { workers: false })
  queue = deliveriesQueue(stack)
})
afterAll(async () => {
  await closeQueue(queue)
  await stack?.stop()
})

async function newApp(): Promise<{ app: TestApp; key: string; liveKey: string }> {
  const app = await stack.newApp({ environments: ['test', 'live'] })
  expectOk(await updateConfig(stack, app, { environment: 'test', webhookUrl: 'https://93.184.216.34/hook' }))
  return { app, key: await app.apiKey('test', ALL_PERMISSIONS), liveKey: await app.apiKey('live', ALL_PERMISSIONS) }
}

const ids = (body: { deliveries: { id: string }[] }) => body.deliveries.map((d) => d.id)

/** n deliveries created one minute apart, oldest first; statuses cycle through the given list. */
async function seed(appDid: string, n: number, statuses: string[] = ['pending'], environment: 'test' | 'live' = 'test'): Promise<string[]> {
  const start = Date.now() - 24 * 3600_000
  const out: string[] = []
  for (let i = 0; i < n; i++) {
    out.push(await insertDelivery(stack, { appDid, environment, status: statuses[i % statuses.length]!, createdAt: new Date(start + i * 60_000) }))
  }
  return out
}

describe('listing', () => {
  it('an app without deliveries lists none', async () => {
    const { app, key } = await newApp()
    expect(expectOk(await listDeliveries(stack, { app: app.did }, bearer(key)))).toEqual({ deliveries: [] })
  })

  it('newest first, 20 by default, up to limit (1–100)', async () => {
    const { app, key } = await newApp()
    const created = await seed(app.did, 25)
    const newestFirst = [...created].reverse()
    expect(ids(expectOk(await listDeliveries(stack, { app: app.did }, bearer(key))))).toEqual(newestFirst.slice(0, 20))
    expect(ids(expectOk(await listDeliveries(stack, { app: app.did, limit: '5' }, bearer(key))))).toEqual(newestFirst.slice(0, 5))
    expect(ids(expectOk(await listDeliveries(stack, { app: app.did, limit: '1' }, bearer(key))))).toEqual(newestFirst.slice(0, 1))
    expect(ids(expectOk(await listDeliveries(stack, { app: app.did, limit: '100' }, bearer(key))))).toEqual(newestFirst)
  })

  it('deliveries created in the same millisecond keep a stable order (id descending)', async () => {
    const { app, key } = await newApp()
    const at = new Date()
    const created = await Promise.all(Array.from({ length: 4 }, () => insertDelivery(stack, { appDid: app.did, environment: 'test', createdAt: at })))
    expect(ids(expectOk(await listDeliveries(stack, { app: app.did }, bearer(key))))).toEqual([...created].sort().reverse())
  })

  it.each(['pending', 'held', 'delivered', 'failed'])('status=%s lists only those, newest first', async (status) => {
    const { app, key } = await newApp()
    const statuses = ['pending', 'held', 'delivered', 'failed']
    const created = await seed(app.did, 12, statuses)
    const expected = created.filter((_, i) => statuses[i % 4] === status).reverse()
    const body = expectOk(await listDeliveries(stack, { app: app.did, status }, bearer(key)))
    expect(ids(body)).toEqual(expected)
    expect(body.deliveries.every((d: { status: string }) => d.status === status)).toBe(true)
    expect(ids(expectOk(await listDeliveries(stack, { app: app.did, status, limit: '2' }, bearer(key))))).toEqual(expected.slice(0, 2))
  })

  it('test-event deliveries appear with their exact shape: every field, null where there is no value', async () => {
    const { app, key } = await newApp()
    const { deliveryId } = expectOk(await testEvent(stack, { app: app.did }, bearer(key)))
    const body = expectOk(await listDeliveries(stack, { app: app.did }, bearer(key)))
    expect(body).toEqual({
      deliveries: [
        {
          id: deliveryId,
          eventType: 'app.webhook.test',
          status: 'pending',
          attemptCount: 0,
          environment: 'test',
          createdAt: expect.any(String),
          lastAttemptAt: null,
          nextAttemptAt: null,
          deliveredAt: null,
          failedAt: null,
          attempts: [],
        },
      ],
    })
    expect(new Date(body.deliveries[0].createdAt).toISOString()).toBe(body.deliveries[0].createdAt)
    // never the envelope, never the app's DID or internal fields
    expect(Object.keys(body.deliveries[0])).not.toContain('body')
  })

  it('the attempt log, sorted by number, with every field', async () => {
    const { app, key } = await newApp()
    const [first, second] = (await seed(app.did, 2, ['failed'])) as [string, string]
    const base = Date.parse('2026-06-01T12:00:00.000Z')
    // written out of order: the listing sorts by number
    for (const number of [3, 1, 2]) {
      await pushAttempt(stack, first, {
        number,
        run: 1,
        channel: 'webhook',
        url: 'https://93.184.216.34/hook',
        attemptedAt: new Date(base + number * 1000),
        durationMs: 10 * number,
        statusCode: number === 2 ? null : 500,
        outcome: 'failed',
        error: number === 2 ? 'timeout' : 'HTTP 500',
        responseExcerpt: number === 2 ? null : 'oops',
        nextAttemptAt: number === 3 ? null : new Date(base + number * 1000 + 5000),
      })
    }
    await pushAttempt(stack, second, {
      number: 1, run: 1, channel: null, url: null, attemptedAt: new Date(base), durationMs: null, statusCode: null, outcome: 'interrupted', error: 'the worker stopped during this attempt', responseExcerpt: null, nextAttemptAt: null,
    })
    const body = expectOk(await listDeliveries(stack, { app: app.did }, bearer(key)))
    const byId = new Map(body.deliveries.map((d: { id: string }) => [d.id, d]))
    const a = byId.get(first) as { attempts: unknown[] }
    expect(a.attempts).toEqual([1, 2, 3].map((number) => ({
      number,
      run: 1,
      attemptedAt: new Date(base + number * 1000).toISOString(),
      channel: 'webhook',
      url: 'https://93.184.216.34/hook',
      statusCode: number === 2 ? null : 500,
      durationMs: 10 * number,
      error: number === 2 ? 'timeout' : 'HTTP 500',
      responseExcerpt: number === 2 ? null : 'oops',
      outcome: 'failed',
      nextAttemptAt: number === 3 ? null : new Date(base + number * 1000 + 5000).toISOString(),
    })))
    expect((byId.get(second) as { attempts: unknown[] }).attempts).toEqual([
      { number: 1, run: 1, attemptedAt: new Date(base).toISOString(), channel: null, url: null, statusCode: null, durationMs: null, error: 'the worker stopped during this attempt', responseExcerpt: null, outcome: 'interrupted', nextAttemptAt: null },
    ])
  })

  it('is read-only: documents and jobs are the same after any number of listings', async () => {
    const { app, key } = await newApp()
    for (let i = 0; i < 3; i++) expectOk(await testEvent(stack, { app: app.did }, bearer(key)))
    await seed(app.did, 3, ['failed', 'delivered', 'held'])
    const before = await snapshot(stack, queue, app.did)
    for (const query of [{}, { status: 'failed' }, { limit: '1' }, { status: 'pending', limit: '100' }]) {
      expectOk(await listDeliveries(stack, { app: app.did, ...query }, bearer(key)))
    }
    await Promise.all(Array.from({ length: 10 }, () => listDeliveries(stack, { app: app.did }, bearer(key))))
    expect(await snapshot(stack, queue, app.did)).toBe(before)
  })
})

describe('400 InvalidRequest for bad parameters', () => {
  it.each([
    ['status', { status: 'sent' }],
    ['status', { status: 'FAILED' }],
    ['status', { status: '' }],
    ['status', { status: ['failed', 'failed'] }],
    ['limit', { limit: 'abc' }],
    ['limit', { limit: '0' }],
    ['limit', { limit: '101' }],
    ['limit', { limit: '-1' }],
    ['limit', { limit: '1.5' }],
    ['limit', { limit: '' }],
    ['limit', { limit: '1e2' }],
    ['limit', { limit: ['5', '5'] }],
    ['limit', { limit: '99999999999999999999' }],
  ])('%s %j', async (name, query) => {
    const { app, key } = await newApp()
    expectError(await listDeliveries(stack, { app: app.did, ...query }, bearer(key)), 400, 'InvalidRequest', new RegExp(name))
  })

  it('unknown parameters are ignored', async () => {
    const { app, key } = await newApp()
    expect(expectOk(await listDeliveries(stack, { app: app.did, cursor: 'x', appDid: 'did:key:zOther' }, bearer(key)))).toEqual({ deliveries: [] })
  })
})

describe('isolation', () => {
  it("a test key of app A sees only A's test deliveries: never B's, never A's live ones", async () => {
    const a = await newApp()
    const b = await newApp()
    const aTest = await seed(a.app.did, 3, ['pending', 'failed', 'delivered'])
    const aLive = await seed(a.app.did, 2, ['failed'], 'live')
    const bTest = await seed(b.app.did, 3, ['failed'])
    const { deliveryId: bEvent } = expectOk(await testEvent(stack, { app: b.app.did }, bearer(b.key)))

    const listed = ids(expectOk(await listDeliveries(stack, { app: a.app.did, limit: '100' }, bearer(a.key))))
    expect([...listed].sort()).toEqual([...aTest].sort())
    expect(ids(expectOk(await listDeliveries(stack, { app: a.app.did, status: 'failed' }, bearer(a.key))))).toEqual([aTest[1]])
    // A's key cannot name B, nor live
    expectError(await listDeliveries(stack, { app: b.app.did }, bearer(a.key)), 401, 'Unauthorized')
    expectError(await listDeliveries(stack, { app: a.app.did, environment: 'live' }, bearer(a.key)), 401, 'Unauthorized')
    // A's live key sees A's live ones only
    expect([...ids(expectOk(await listDeliveries(stack, { app: a.app.did }, bearer(a.liveKey))))].sort()).toEqual([...aLive].sort())
    // and B's key sees B's
    expect([...ids(expectOk(await listDeliveries(stack, { app: b.app.did }, bearer(b.key))))].sort()).toEqual([...bTest, bEvent].sort())
  })
})
