/**
 * Collected gauges (metrics.ts): a scrape answers while a gauge's store is away, with the gauge's last values. Request
 * durations (routes.ts): a request whose client left is counted too.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify from 'fastify'
import { collectedGauge, COLLECT_TIMEOUT_MS, counter, createMetrics } from '../src/metrics'
import { operationsRoutes } from '../src/routes'

test('a collection that hangs (Redis away) does not hang the scrape: the last values show, and it is not started again meanwhile', async () => {
  const metrics = createMetrics('test-process')
  counter(metrics, 'svc_things_total', 'things', ['kind'] as const).inc({ kind: 'a' })
  let calls = 0
  let hang = false
  collectedGauge(metrics, 'svc_queue_jobs', 'jobs', ['queue'] as const, async (gauge) => {
    calls++
    if (hang) return new Promise<void>(() => undefined)
    gauge.set({ queue: 'deliveries' }, 7)
  })
  expect(await metrics.registry.metrics()).toMatch(/^svc_queue_jobs\{queue="deliveries"[^}]*\} 7$/m)

  hang = true
  for (let scrape = 0; scrape < 2; scrape++) {
    const text = await metrics.registry.metrics()
    expect(text).toMatch(/^svc_queue_jobs\{queue="deliveries"[^}]*\} 7$/m)
    expect(text).toMatch(/^svc_things_total\{kind="a"[^}]*\} 1$/m)
  }
  // (the counter is written out before the gauge collects: read it directly)
  const failures = await metrics.registry.getSingleMetric('svc_metrics_collect_failures_total')!.get()
  expect(failures.values.map((v) => [v.labels.gauge, v.value])).toEqual([['svc_queue_jobs', 2]])
  // the hung collection was started once, not once per scrape
  expect(calls).toBe(2)
}, 4 * COLLECT_TIMEOUT_MS + 5000)

test('a request whose client hangs up before its answer is counted, as aborted, with the time it had run', async () => {
  const metrics = createMetrics('test-process')
  const app = Fastify()
  await app.register(operationsRoutes, { metrics, metricsToken: 'token', readiness: {} })
  const caller = new AbortController()
  let finished!: () => void
  const handled = new Promise<void>((resolve) => (finished = resolve))
  app.get('/slow', async () => {
    await sleep(50)
    caller.abort() // the caller's deadline passes while the request runs
    await sleep(250)
    finished()
    return { ok: true }
  })
  app.get('/fast', async () => ({ ok: true }))
  const url = await app.listen({ host: '127.0.0.1', port: 0 })
  try {
    await expect(fetch(`${url}/slow`, { signal: caller.signal })).rejects.toThrow()
    await handled
    expect((await fetch(`${url}/fast`)).status).toBe(200)
    // a histogram's values carry the series they belong to (_bucket, _sum, _count)
    const values = (await metrics.registry.getSingleMetric('svc_http_request_duration_seconds')!.get()).values as { metricName?: string; labels: Record<string, string | number>; value: number }[]
    const counted = values.filter((v) => v.metricName === 'svc_http_request_duration_seconds_count').map((v) => [v.labels.route, v.labels.status, v.value])
    expect(counted.sort()).toEqual([['/fast', '200', 1], ['/slow', 'aborted', 1]])
    const slowSum = values.find((v) => v.metricName === 'svc_http_request_duration_seconds_sum' && v.labels.route === '/slow')!
    expect(slowSum.value).toBeGreaterThanOrEqual(0.04)
  } finally {
    await app.close()
  }
})

test('probes (/livez, /readyz, /metrics) write no request lines; other routes do', async () => {
  const lines: { msg?: string; req?: { url?: string } }[] = []
  const app = Fastify({ logger: { level: 'info', stream: { write: (line: string) => void lines.push(JSON.parse(line) as { msg?: string }) } } })
  await app.register(operationsRoutes, { metrics: createMetrics('test-probes'), metricsToken: 'm'.repeat(40), readiness: {} })
  app.get('/work', async () => ({ ok: true }))
  for (const url of ['/livez', '/readyz', '/metrics']) expect((await app.inject({ url, headers: { authorization: `Bearer ${'m'.repeat(40)}` } })).statusCode).toBe(200)
  expect(lines.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed')).toEqual([])
  await app.inject({ url: '/work' })
  expect(lines.filter((l) => l.msg === 'incoming request').map((l) => l.req?.url)).toEqual(['/work'])
  await app.close()
})

test('probes of /readyz arriving while its checks run share them (the public hosts serve it to anyone); a later probe checks again', async () => {
  const app = Fastify()
  let checks = 0
  await app.register(operationsRoutes, {
    metrics: createMetrics('test-readiness'),
    metricsToken: 'm'.repeat(40),
    readiness: { redis: async () => { checks++; await sleep(50) } },
  })
  const answers = await Promise.all(Array.from({ length: 20 }, () => app.inject({ url: '/readyz' })))
  expect(answers.map((a) => a.statusCode)).toEqual(Array(20).fill(200))
  // before: 20 checks, one per probe
  expect(checks).toBe(1)
  await app.inject({ url: '/readyz' })
  expect(checks).toBe(2)
  await app.close()
})
