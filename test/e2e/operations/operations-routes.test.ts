/**
 * The operations routes (docs/operations.md) on the real stack: /livez, /readyz and /metrics on the adapter's two
 * hosts, the gateway and a subgraph; metrics only with the metrics token; requests counted per NSID; database
 * commands counted by the subgraph; readiness 503 naming the dependency that does not answer.
 */
import Redis from 'ioredis'
import pino from 'pino'
import type { DashboardSessions } from '@svc/dashboard-session'
import { createMetrics } from '@svc/operations'
import type { ServiceAuthVerifier } from '@svc/service-auth'
import { buildApiServer } from '@svc/xrpc-adapter'
import { startStack, TEST_LIMITS, type TestStack } from '../../stack'
import { bearer, expectOk, getConfig, httpRequest } from '../adapter/helpers'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('operations-routes')
})
afterAll(async () => {
  await stack.stop()
})

const origin = (url: string) => new URL(url).origin
const metrics = (base: string, token?: string) => httpRequest(`${origin(base)}/metrics`, { headers: token ? bearer(token) : {} })

/** The value of one sample line of a Prometheus text body (labels in any order), or null. */
function sample(text: string, name: string, labels: Record<string, string>): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue
    const labelText = line.slice(name.length + 1, line.lastIndexOf('}'))
    if (Object.entries(labels).every(([k, v]) => labelText.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return null
}

it('every process of the stack answers /livez and /readyz', async () => {
  for (const base of [stack.apiUrl, stack.checkoutUrl, stack.gatewayUrl, stack.appsSubgraphUrl, stack.actorsSubgraphUrl, stack.paymentsSubgraphUrl, stack.eventsSubgraphUrl, stack.ticketsSubgraphUrl]) {
    expect((await httpRequest(`${origin(base)}/livez`)).body).toEqual({ ok: true })
    const ready = await httpRequest(`${origin(base)}/readyz`)
    expect({ base, status: ready.status, ok: ready.body.ok }).toEqual({ base, status: 200, ok: true })
  }
  expect((await httpRequest(`${origin(stack.paymentsSubgraphUrl)}/readyz`)).body.checks).toEqual({ database: 'ok' })
  expect((await httpRequest(`${origin(stack.apiUrl)}/readyz`)).body.checks).toEqual({ redis: 'ok' })
})

it('metrics only with the metrics token (the operator token is not it)', async () => {
  for (const base of [stack.apiUrl, stack.gatewayUrl, stack.paymentsSubgraphUrl]) {
    expect((await metrics(base)).status).toBe(401)
    expect((await metrics(base, 'not-the-metrics-token')).status).toBe(401)
    expect((await metrics(base, stack.secrets.operatorToken)).status).toBe(401)
    const res = await metrics(base, stack.secrets.metricsToken)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
    expect(res.text).toContain('process_resident_memory_bytes')
  }
})

it('the adapter counts requests per NSID and status; the subgraph counts its database commands', async () => {
  const app = await stack.newApp()
  expectOk(await getConfig(stack, app, 'test'))
  expectOk(await getConfig(stack, app, 'test'))
  await httpRequest(`${stack.apiUrl}/xrpc/com.example.notAMethod`)
  // other spellings of a method the route does not serve, and a definition that is not a method, are unknown too
  for (const name of ['lex:money.svc.app.getConfig', 'money.svc.app.getConfig%23main', 'money.svc.app.getConfig%23webhook']) {
    expect((await httpRequest(`${stack.apiUrl}/xrpc/${name}`)).status).toBe(501)
  }
  const adapter = (await metrics(stack.apiUrl, stack.secrets.metricsToken)).text
  expect(adapter).not.toMatch(/route="(lex:|[^"]*#)/)
  const counted = sample(adapter, 'svc_http_request_duration_seconds_count', { process: 'xrpc-adapter', method: 'GET', route: 'money.svc.app.getConfig', status: '200' })
  expect(counted).toBeGreaterThanOrEqual(2)
  expect(sample(adapter, 'svc_http_request_duration_seconds_count', { route: 'unknown-nsid', status: '501' })).toBeGreaterThanOrEqual(1)

  const apps = (await metrics(stack.appsSubgraphUrl, stack.secrets.metricsToken)).text
  expect(sample(apps, 'svc_db_command_duration_seconds_count', { process: 'subgraph-apps', command: 'find', outcome: 'ok' })).toBeGreaterThanOrEqual(2)
  expect(sample(apps, 'svc_http_request_duration_seconds_count', { route: '/graphql', status: '200' })).toBeGreaterThanOrEqual(2)
})

it('readiness answers 503 naming the dependency that does not answer', async () => {
  const redis = new Redis({ port: 1, lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 })
  const api = await buildApiServer({
    logger: pino({ level: 'silent' }),
    gateway: {} as never,
    serviceAuth: {} as ServiceAuthVerifier,
    dashboardSessions: {} as DashboardSessions,
    checkoutUrl: 'http://127.0.0.1:1',
    redis,
    redisPrefix: 'operations-test:',
    limits: TEST_LIMITS,
    metrics: createMetrics('xrpc-adapter'),
    metricsToken: stack.secrets.metricsToken,
    readiness: { gateway: async () => { throw new Error('gateway answered 502') } },
  })
  try {
    // anyone: which dependency failed, not why (an error's text may name internal addresses)
    const res = await api.inject({ method: 'GET', url: '/readyz' })
    expect(res.statusCode).toBe(503)
    expect(res.json()).toEqual({ ok: false, checks: { redis: 'unavailable', gateway: 'unavailable' } })
    // with the metrics token: why
    const detailed = await api.inject({ method: 'GET', url: '/readyz', headers: { authorization: `Bearer ${stack.secrets.metricsToken}` } })
    expect(detailed.statusCode).toBe(503)
    const body = detailed.json()
    expect(body.ok).toBe(false)
    expect(body.checks.gateway).toBe('gateway answered 502')
    expect(body.checks.redis).not.toMatch(/^(ok|unavailable)$/)
    expect((await api.inject({ method: 'GET', url: '/livez' })).statusCode).toBe(200)
  } finally {
    await api.close()
    redis.disconnect()
  }
})
