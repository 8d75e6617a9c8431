/**
 * The operators' board over real Redis and BullMQ queues, on a real HTTP listener: every route (page, static
 * assets, JSON API) needs the operator token, as the Basic password or a Bearer token; with it, the API lists
 * both queues of the events domain, under the deployment's prefix, with the jobs on them. A path its static files
 * refuse answers `{ error, message }` with no stack, under NODE_ENV=development too.
 */
import { Queue } from 'bullmq'
import Redis from 'ioredis'
import pino from 'pino'
import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { isolate } from '@svc/testing/src/isolation'
import { buildBoard } from '../src/board/server'
import { ALL_QUEUES, DOMAIN_EVENTS_QUEUE, WEBHOOK_DELIVERIES_QUEUE, queuePrefix } from '../src/queues'

const iso = isolate('events_board')
const token = randomBytes(32).toString('hex')
const logLines: string[] = []
const logger = pino(
  { level: 'info' },
  new Writable({
    write(chunk, _enc, done) {
      logLines.push(String(chunk))
      done()
    },
  }),
)
let board: FastifyInstance
let url: string
let redis: Redis
let events: Queue

beforeAll(async () => {
  redis = new Redis(iso.redisUrl, { maxRetriesPerRequest: null })
  events = new Queue(DOMAIN_EVENTS_QUEUE, { connection: redis, prefix: queuePrefix(iso.redisPrefix) })
  board = await buildBoard({ redisUrl: iso.redisUrl, redisPrefix: iso.redisPrefix, operatorToken: token, logger })
  await board.listen({ host: '127.0.0.1', port: 0 })
  url = `http://127.0.0.1:${(board.server.address() as { port: number }).port}`
})

afterAll(async () => {
  await board?.close()
  await events?.close()
  const keys = await redis.keys(`${iso.redisPrefix}*`)
  if (keys.length) await redis.del(...keys)
  redis.disconnect()
})

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

describe('operator authentication', () => {
  test.each([
    ['no credentials', undefined],
    ['a wrong Basic password', basic('operator', 'not-the-token')],
    ['the token as the Basic user name', basic(token, '')],
    ['a wrong Bearer token', 'Bearer not-the-token'],
    ['the token under another scheme', `Token ${token}`],
  ])('%s: 401 with the Basic challenge, on the page, the API and an unknown path', async (_label, authorization) => {
    for (const path of ['/board', '/board/api/queues', '/board/static/does-not-matter.js', '/elsewhere']) {
      const res = await fetch(`${url}${path}`, { headers: authorization ? { authorization } : {} })
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe('Basic realm="svc board"')
      expect(res.headers.get('svc-request-id')).toMatch(/^req_[0-9a-f]{32}$/)
    }
  })

  test('the page answers 200 with Basic (any user name) and with Bearer', async () => {
    for (const authorization of [basic('anyone', token), basic('', token), `Bearer ${token}`]) {
      const res = await fetch(`${url}/board`, { headers: { authorization } })
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/text\/html/)
      const html = await res.text()
      // the page loads its assets from under the board's base path, which the same authentication guards
      expect(html).toContain('<base href="/board/" />')
      const asset = /src="(static\/js\/main\.[^"]+\.js)"/.exec(html)?.[1]
      expect(asset).toBeDefined()
      expect((await fetch(`${url}/board/${asset}`)).status).toBe(401)
      const served = await fetch(`${url}/board/${asset}`, { headers: { authorization } })
      expect(served.status).toBe(200)
      expect(served.headers.get('content-type')).toMatch(/javascript/)
    }
  })

  test('/health answers without credentials', async () => {
    const res = await fetch(`${url}/health`)
    expect(res.status).toBe(200)
  })

  test('the logs carry request ids and never the Authorization header', async () => {
    await fetch(`${url}/board/api/queues`, { headers: { authorization: basic('op', 'wrong-password-123') } })
    await fetch(`${url}/board/api/queues`, { headers: { authorization: `Bearer ${token}` } })
    // a script that put the token in a query: refused, and the line of its request shows no query
    expect((await fetch(`${url}/board/api/queues?token=${token}`)).status).toBe(401)
    const all = logLines.join('')
    expect(all).not.toContain(token)
    expect(all).not.toContain('wrong-password-123')
    expect(all).not.toContain(Buffer.from('op:wrong-password-123').toString('base64'))
    const failures = logLines.map((l) => JSON.parse(l) as { msg?: string; reqId?: string; reason?: string }).filter((l) => l.msg === 'board: operator authentication failed')
    expect(failures.length).toBeGreaterThan(0)
    expect(failures.map((f) => f.reason)).toEqual(expect.arrayContaining(['wrong-token', 'missing']))
    expect(failures.at(-1)).toMatchObject({ reqId: expect.stringMatching(/^req_/) })
  })
})

describe('a path the static files refuse', () => {
  // bull-board's error handler put the stack in `details` under NODE_ENV=development (what `npm run dev` sets)
  let nodeEnv: string | undefined
  beforeAll(() => {
    nodeEnv = process.env.NODE_ENV
    process.env.NODE_ENV = 'development'
  })
  afterAll(() => {
    process.env.NODE_ENV = nodeEnv
  })

  test.each([
    '/board/static/..%2f..%2fpackage.json',
    '/board/static/..%2F..%2F..%2F..%2Fpackage.json',
    '/board/static/%2e%2e%2f%2e%2e%2fpackage.json',
    '/board/static/..%5c..%5cpackage.json',
    '/board/static/....//....//package.json',
    '/board/static/%00',
    '/board/static/js/..%5c..%5c..%5cindex.ejs',
  ])('%s: 403 or 404 as `{ error, message }`, with no stack, file path or details', async (path) => {
    const res = await fetch(`${url}${path}`, { headers: { authorization: `Bearer ${token}` } })
    expect([403, 404]).toContain(res.status)
    const text = await res.text()
    const body = JSON.parse(text) as Record<string, unknown>
    expect(Object.keys(body).sort()).toEqual(['error', 'message'])
    expect(body.error).toBe(res.status === 403 ? 'NotAllowed' : 'NotFound')
    expect(text).not.toMatch(/node_modules|\bat \w|Error:/)
    expect(text).not.toContain(process.cwd())
  })
})

test('the API lists both queues of the events domain, with a job added to one of them', async () => {
  const eventId = `evt_${randomBytes(16).toString('hex')}`
  await events.add('payment.completed', { eventId, source: 'payments', type: 'payment.completed' }, { jobId: eventId })
  const res = await fetch(`${url}/board/api/queues?activeQueue=${DOMAIN_EVENTS_QUEUE}&status=latest&page=1&jobsPerPage=10`, {
    headers: { authorization: `Bearer ${token}` },
  })
  expect(res.status).toBe(200)
  const body = (await res.json()) as { queues: { name: string; counts: Record<string, number>; jobs: { id: string; name: string; data: { eventId: string } }[] }[] }
  expect(body.queues.map((q) => q.name).sort()).toEqual([...ALL_QUEUES].sort())
  expect(body.queues.map((q) => q.name)).toEqual(expect.arrayContaining([DOMAIN_EVENTS_QUEUE, WEBHOOK_DELIVERIES_QUEUE]))
  const domainEvents = body.queues.find((q) => q.name === DOMAIN_EVENTS_QUEUE)!
  expect(domainEvents.counts.waiting).toBe(1)
  expect(domainEvents.jobs).toEqual([expect.objectContaining({ id: eventId, name: 'payment.completed', data: expect.objectContaining({ eventId }) })])
  expect(body.queues.find((q) => q.name === WEBHOOK_DELIVERIES_QUEUE)?.counts.waiting).toBe(0)
})

test('the board only watches: every action that would remove, add, edit, retry or move a job answers 405 and the job stays', async () => {
  const eventId = `evt_${randomBytes(16).toString('hex')}`
  await events.add('payment.completed', { eventId, source: 'payments', type: 'payment.completed' }, { jobId: eventId })
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${url}/board/api/queues/${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
  const q = DOMAIN_EVENTS_QUEUE
  const before = await events.getJobCounts()
  const actions: [string, string, unknown?][] = [
    ['PUT', `${q}/${eventId}/clean`],
    ['PATCH', `${q}/${eventId}/update-data`, { jobData: { eventId: 'evt_other' } }],
    ['PUT', `${q}/${eventId}/promote`],
    ['PUT', `${q}/${eventId}/retry`],
    ['PUT', `${q}/clean/waiting`],
    ['PUT', `${q}/clean/failed`],
    ['PUT', `${q}/retry/failed`],
    ['PUT', `${q}/empty`],
    ['PUT', `${q}/obliterate`],
    ['PUT', `${q}/pause`],
    ['POST', `${q}/add`, { name: 'payment.completed', data: { eventId: 'evt_forged' } }],
    ['POST', `${WEBHOOK_DELIVERIES_QUEUE}/add`, { name: 'deliver', data: { deliveryId: 'whd_forged' } }],
    // what would move a job in time (a hold's expiry, a delivery's next attempt) or throttle a queue's workers
    ['PATCH', `${q}/${eventId}/delay`, { runAt: Date.now() + 60_000 }],
    ['PATCH', `${q}/${eventId}/priority`, { priority: 1 }],
    ['PUT', `${q}/${eventId}/remove-unprocessed-children`],
    ['PUT', `${q}/concurrency`, { concurrency: 1 }],
    ['PUT', `${q}/rate-limit`, { max: 1, duration: 60_000 }],
    ['PUT', `${q}/rate-limit/release`],
    ['PUT', `${q}/resume`],
    ['PUT', `${q}/job-schedulers/any/remove`],
    ['PATCH', `${q}/job-schedulers/any`, { every: 1000 }],
    ['PUT', `${q}/job-schedulers/any/run`],
    // every queue at once
    ['PUT', 'pause'],
    ['PUT', 'resume'],
  ]
  for (const [method, path, body] of actions) {
    const res = await call(method, path, body)
    expect([method, path, res.status, await res.json()]).toEqual([method, path, 405, { error: 'MethodNotAllowed', message: 'the board is read-only: it never changes a queue or a job' }])
  }
  const job = await events.getJob(eventId)
  expect(job?.data).toEqual({ eventId, source: 'payments', type: 'payment.completed' })
  expect(await job?.getState()).toBe('waiting')
  expect(await events.isPaused()).toBe(false)
  expect(await events.getJobCounts()).toEqual(before)
  // the listing says so, and the page offers no actions
  const listed = (await (await fetch(`${url}/board/api/queues?activeQueue=${q}&status=latest&page=1&jobsPerPage=10`, { headers: { authorization: `Bearer ${token}` } })).json()) as { queues: { name: string; readOnlyMode: boolean }[] }
  expect(listed.queues.every((queue) => queue.readOnlyMode)).toBe(true)
})

test("bull-board's own refusals answer in the service's shape: an unknown queue or job", async () => {
  const get = async (path: string) => {
    const res = await fetch(`${url}/board/api/queues/${path}`, { headers: { authorization: `Bearer ${token}` } })
    return [res.status, await res.json()]
  }
  expect(await get('no-such-queue/evt_x')).toEqual([404, { error: 'NotFound', message: 'queue not found' }])
  expect(await get(`${DOMAIN_EVENTS_QUEUE}/evt_${randomBytes(16).toString('hex')}`)).toEqual([404, { error: 'NotFound', message: 'job not found' }])
})

test('once closing, the board answers with Connection: close, as every process does (its keep-alive sockets do not hold the stop)', () => {
  expect(board.hasPlugin('svc-closing-connections')).toBe(true)
})
