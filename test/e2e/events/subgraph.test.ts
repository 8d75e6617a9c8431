/**
 * The events subgraph's operations through the real gateway, per principal: `deliveries`, `createTestDelivery`,
 * `redriveDeliveries` for the service `xrpc-adapter` and operators; `ensureSigningSecret` for the service `apps` and
 * operators; `delivery`,
 * `rotateSigningSecret` and `Delivery.body` for operators only; anyone else NotAllowed. Plus the delivery log's
 * order, filters, argument checks, ISO dates, and its attempts read with one query for the whole page.
 */
import { signedContext } from '@svc/testing'
import type { Principal } from '@svc/internal-context'
import mongoose from 'mongoose'
import { startStack, type TestStack } from '../../stack'
import { createDelivery, DELIVERY_ID_RE, newDeliveryId } from '@svc/events'

let stack: TestStack
const APP = 'did:web:events-subgraph.example.com'

type Caller = 'operator' | Principal
const ADAPTER: Caller = { kind: 'service', name: 'xrpc-adapter' }
const APPS: Caller = { kind: 'service', name: 'apps' }

interface GqlResult {
  data?: any
  errors?: { message: string; extensions?: { code?: string } }[]
}

async function gql(as: Caller, query: string, variables: Record<string, unknown> = {}): Promise<GqlResult> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (as === 'operator') headers.authorization = `Bearer ${stack.secrets.operatorToken}`
  // each process signs with its own key: the events workers' makes them the service `events`
  else headers['svc-context'] = signedContext(stack.secrets.callerKeys, as)
  const res = await fetch(stack.gatewayUrl, { method: 'POST', headers, body: JSON.stringify({ query, variables }) })
  expect(res.status).toBe(200)
  return (await res.json()) as GqlResult
}

const codeOf = (r: GqlResult) => r.errors?.find((e) => e.extensions?.code)?.extensions?.code

beforeAll(async () => {
  // the outbox relays poll rarely, so no poll lands inside a read that is counted
  stack = await startStack('events-subgraph', { workers: false, relayIntervalMs: 600_000 })
})
afterAll(async () => {
  await stack?.stop()
})

async function insert(appDid: string, environment: 'test' | 'live', status: string, createdAt: Date): Promise<string> {
  const id = newDeliveryId()
  await createDelivery(stack.deliveryLog, { id, appDid, environment, eventId: null, eventType: 'payment.completed', source: 'payments', createdAt, data: { n: 1 } })
  await stack.events.Delivery.collection.updateOne({ _id: id as never }, { $set: { status, createdAt } })
  return id
}

const LIST = `query L($appDid: ID!, $environment: String!, $status: String, $limit: Int) {
  deliveries(appDid: $appDid, environment: $environment, status: $status, limit: $limit) {
    id eventType status attemptCount appDid environment eventId createdAt lastAttemptAt nextAttemptAt
    lastStatusCode lastError deliveredAt failedAt body attempts { number run channel attemptedAt outcome statusCode error }
  }
}`

describe('principals', () => {
  const OTHERS: [string, Caller][] = [
    ['another service', { kind: 'service', name: 'events' }],
    ['an app', { kind: 'app', appDid: APP }],
    ['an API key', { kind: 'apiKey', keyHash: 'a'.repeat(64) }],
    ['a dashboard session', { kind: 'dashboard', actorDid: 'did:plc:abc', environment: 'test', sessionId: 's' }],
  ]
  const ADAPTER_OR_OPERATOR: [string, string, Record<string, unknown>][] = [
    ['deliveries', `query($a: ID!) { deliveries(appDid: $a, environment: "test") { id } }`, { a: APP }],
    ['createTestDelivery', `mutation($a: ID!) { createTestDelivery(appDid: $a, environment: "test") { id } }`, { a: APP }],
    ['redriveDeliveries', `mutation($a: ID!) { redriveDeliveries(appDid: $a, environment: "test", input: { status: "failed" }) { ok queued } }`, { a: APP }],
  ]
  const OPERATOR_ONLY: [string, string, Record<string, unknown>][] = [
    ['delivery', `query { delivery(id: "whd_${'0'.repeat(32)}") { id } }`, {}],
    ['rotateSigningSecret', `mutation($a: ID!) { rotateSigningSecret(appDid: $a, environment: "live") { generation } }`, { a: APP }],
  ]

  it.each(ADAPTER_OR_OPERATOR)('%s: the xrpc-adapter service and operators may call it; anyone else is NotAllowed', async (_name, query, variables) => {
    expect((await gql(ADAPTER, query, variables)).errors).toBeUndefined()
    expect((await gql('operator', query, variables)).errors).toBeUndefined()
    for (const [, caller] of OTHERS) expect(codeOf(await gql(caller, query, variables))).toBe('NotAllowed')
  })

  it('ensureSigningSecret: the apps domain (updateConfig) and operators may call it; the adapter and anyone else is NotAllowed', async () => {
    const query = `mutation($a: ID!) { ensureSigningSecret(appDid: $a, environment: "test") { created generation } }`
    expect((await gql(APPS, query, { a: APP })).errors).toBeUndefined()
    expect((await gql('operator', query, { a: APP })).errors).toBeUndefined()
    for (const caller of [ADAPTER, ...OTHERS.map(([, c]) => c)]) expect(codeOf(await gql(caller, query, { a: APP }))).toBe('NotAllowed')
  })

  it.each(OPERATOR_ONLY)('%s: operators only', async (_name, query, variables) => {
    expect((await gql('operator', query, variables)).errors).toBeUndefined()
    for (const [, caller] of [['adapter', ADAPTER] as const, ...OTHERS]) expect(codeOf(await gql(caller, query, variables))).toBe('NotAllowed')
  })

  it('Delivery.body (the envelope as sent) is shown to operators only', async () => {
    const app = 'did:web:body.example.com'
    const id = await insert(app, 'test', 'pending', new Date())
    const q = `query($a: ID!) { deliveries(appDid: $a, environment: "test") { id body } }`
    const asAdapter = await gql(ADAPTER, q, { a: app })
    expect(asAdapter.data.deliveries).toEqual([{ id, body: null }])
    const asOperator = await gql('operator', q, { a: app })
    expect(JSON.parse(asOperator.data.deliveries[0].body)).toMatchObject({ id, type: 'payment.completed', apiVersion: '2026-06', environment: 'test' })
    const one = await gql('operator', `query($id: ID!) { delivery(id: $id) { id body appDid } }`, { id })
    expect(one.data.delivery).toMatchObject({ id, appDid: app })
    expect(JSON.parse(one.data.delivery.body).id).toBe(id)
  })
})

describe('deliveries', () => {
  it('newest first, filtered by app, environment and status, limited; dates as ISO strings', async () => {
    const app = 'did:web:list.example.com'
    const t0 = Date.parse('2026-05-01T00:00:00.000Z')
    const ids: string[] = []
    for (let i = 0; i < 6; i++) ids.push(await insert(app, 'test', i % 2 ? 'failed' : 'delivered', new Date(t0 + i * 1000)))
    await insert(app, 'live', 'failed', new Date(t0 + 10_000))
    await insert('did:web:other.example.com', 'test', 'failed', new Date(t0 + 10_000))

    const all = await gql(ADAPTER, LIST, { appDid: app, environment: 'test' })
    expect(all.data.deliveries.map((d: { id: string }) => d.id)).toEqual([...ids].reverse())
    expect(all.data.deliveries[0]).toMatchObject({ appDid: app, environment: 'test', createdAt: new Date(t0 + 5000).toISOString(), eventId: null, attempts: [] })
    const failed = await gql(ADAPTER, LIST, { appDid: app, environment: 'test', status: 'failed', limit: 2 })
    expect(failed.data.deliveries.map((d: { id: string }) => d.id)).toEqual([ids[5], ids[3]])
    const live = await gql(ADAPTER, LIST, { appDid: app, environment: 'live' })
    expect(live.data.deliveries).toHaveLength(1)
  })

  it.each<[string, Record<string, unknown>]>([
    ['status', { status: 'sent' }],
    ['limit', { limit: 0 }],
    ['limit', { limit: 101 }],
    ['environment', { environment: 'prod' }],
    ['appDid', { appDid: 'not-a-did' }],
  ])('a bad %s is InvalidRequest', async (_name, over) => {
    const r = await gql(ADAPTER, LIST, { appDid: APP, environment: 'test', ...over })
    expect(codeOf(r)).toBe('InvalidRequest')
  })

  it("a page and its attempts are one read of the deliveries (the log is in each delivery), each delivery's attempts sorted by number", async () => {
    const app = 'did:web:attempts.example.com'
    const ids = await Promise.all([0, 1, 2].map((i) => insert(app, 'test', 'failed', new Date(Date.now() - i * 1000))))
    for (const id of ids) {
      for (const number of [2, 3, 1]) {
        const attempt = { number, run: 1, channel: 'webhook', url: null, attemptedAt: new Date(), durationMs: 3, statusCode: 500, outcome: 'failed', error: 'HTTP 500', responseExcerpt: null, nextAttemptAt: null }
        await stack.events.Delivery.updateOne({ _id: id }, { $push: { attempts: attempt } })
      }
    }
    const reads: string[] = []
    // the hook every test file has (packages/testing/src/indexed-queries.ts) still sees them
    const previous = mongoose.get('debug') as ((this: unknown, ...args: unknown[]) => void) | false
    mongoose.set('debug', function (this: unknown, collection: string, method: string, ...rest: unknown[]) {
      reads.push(`${collection}.${method}`)
      if (previous) previous.call(this, collection, method, ...rest)
    })
    try {
      const r = await gql(ADAPTER, LIST, { appDid: app, environment: 'test' })
      expect(r.errors).toBeUndefined()
      expect(r.data.deliveries).toHaveLength(3)
      for (const d of r.data.deliveries) expect(d.attempts.map((a: { number: number }) => a.number)).toEqual([1, 2, 3])
    } finally {
      mongoose.set('debug', previous)
    }
    expect(reads).toEqual(['deliveries.find'])
  })
})

describe('createTestDelivery', () => {
  it('a new pending app.webhook.test delivery per call, queued with its id as job id', async () => {
    const app = 'did:web:test-delivery.example.com'
    const q = `mutation($a: ID!) { createTestDelivery(appDid: $a, environment: "test") { id eventType status attemptCount environment createdAt eventId } }`
    const [a, b] = await Promise.all([gql(ADAPTER, q, { a: app }), gql(ADAPTER, q, { a: app })])
    for (const r of [a, b]) {
      expect(r.data.createTestDelivery).toMatchObject({ eventType: 'app.webhook.test', status: 'pending', attemptCount: 0, environment: 'test', eventId: null })
      expect(r.data.createTestDelivery.id).toMatch(DELIVERY_ID_RE)
    }
    expect(a.data.createTestDelivery.id).not.toBe(b.data.createTestDelivery.id)
    const doc = await stack.events.Delivery.findById(a.data.createTestDelivery.id).lean()
    const envelope = JSON.parse(doc!.body)
    expect(envelope).toMatchObject({ id: a.data.createTestDelivery.id, type: 'app.webhook.test', environment: 'test' })
    expect(envelope.data).toEqual({ test: true, message: expect.any(String), requestedAt: envelope.createdAt })
    expect(Math.abs(Date.parse(envelope.createdAt) - Date.parse(a.data.createTestDelivery.createdAt))).toBeLessThan(1000)
  })
})

describe('signing secrets', () => {
  const ENSURE = `mutation($a: ID!, $e: String!) { ensureSigningSecret(appDid: $a, environment: $e) { secret created generation hint previousExpiresAt } }`
  const ROTATE = `mutation($a: ID!, $e: String!, $o: Int) { rotateSigningSecret(appDid: $a, environment: $e, overlapSeconds: $o) { secret created generation hint previousExpiresAt } }`

  it('ensureSigningSecret: the first call creates and returns it; later calls of the apps domain return it, of an operator only its hint', async () => {
    const app = 'did:web:ensure.example.com'
    const first = (await gql(APPS, ENSURE, { a: app, e: 'test' })).data.ensureSigningSecret
    expect(first).toEqual({ secret: expect.stringMatching(/^whsec_/), created: true, generation: 1, hint: first.secret.slice(-4), previousExpiresAt: null })
    // the apps domain asks until the app has it, so it gets the secret again; an operator only its hint
    const again = (await gql(APPS, ENSURE, { a: app, e: 'test' })).data.ensureSigningSecret
    expect(again).toEqual({ secret: first.secret, created: false, generation: 1, hint: first.hint, previousExpiresAt: null })
    const operator = (await gql('operator', ENSURE, { a: app, e: 'test' })).data.ensureSigningSecret
    expect(operator).toEqual({ secret: null, created: false, generation: 1, hint: first.hint, previousExpiresAt: null })
    expect(codeOf(await gql(APPS, ENSURE, { a: app, e: 'staging' }))).toBe('InvalidRequest')
  })

  it('rotateSigningSecret (operators): a new generation, the previous ones signing until the overlap ends', async () => {
    const app = 'did:web:rotate.example.com'
    await gql(APPS, ENSURE, { a: app, e: 'test' })
    const before = Date.now()
    const rotated = (await gql('operator', ROTATE, { a: app, e: 'test', o: 3600 })).data.rotateSigningSecret
    expect(rotated).toMatchObject({ secret: expect.stringMatching(/^whsec_/), created: true, generation: 2 })
    const ends = Date.parse(rotated.previousExpiresAt)
    expect(ends).toBeGreaterThanOrEqual(before + 3600_000 - 1000)
    expect(ends).toBeLessThanOrEqual(Date.now() + 3600_000 + 1000)
    const defaults = (await gql('operator', ROTATE, { a: app, e: 'test' })).data.rotateSigningSecret
    expect(defaults.generation).toBe(3)
    expect(Date.parse(defaults.previousExpiresAt) - Date.now()).toBeGreaterThan(24 * 3600_000 - 60_000)
    for (const o of [-1, 7 * 24 * 3600 + 1]) expect(codeOf(await gql('operator', ROTATE, { a: app, e: 'test', o }))).toBe('InvalidRequest')
  })
})
