/** Collected gauges (metrics.ts): a scrape answers while a gauge's store is away, with the gauge's last values. */
import { collectedGauge, COLLECT_TIMEOUT_MS, counter, createMetrics } from '../src/metrics'

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
