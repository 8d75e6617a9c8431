/**
 * Each process's Prometheus registry (prom-client): the process's own figures (memory, CPU, event-loop lag), the
 * duration of every HTTP request it serves by route and status, and the figures a process adds (database commands,
 * queue depth, delivery outcomes). Every series carries `process`.
 */
import pTimeout from 'p-timeout'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'

export interface ProcessMetrics {
  registry: Registry
  /** `svc_http_request_duration_seconds{method, route, status}`: route is the NSID on /xrpc, else the route's pattern */
  httpDuration: Histogram<'method' | 'route' | 'status'>
}

/** up to the longest waits a request may have: a pay (the processor's 20 s and more), a subgraph's 30 s, the adapter's 60 s */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 20, 30, 45, 60]

export function createMetrics(processName: string): ProcessMetrics {
  const registry = new Registry()
  registry.setDefaultLabels({ process: processName })
  collectDefaultMetrics({ register: registry })
  const httpDuration = new Histogram({
    name: 'svc_http_request_duration_seconds',
    help: 'HTTP requests served, by method, route (the NSID on /xrpc) and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: SECONDS,
    registers: [registry],
  })
  return { registry, httpDuration }
}

/** up to the hours a backlog of work may wait */
export const LONG_WAIT_SECONDS: readonly number[] = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 10800]

/**
 * A histogram of seconds on the registry (one per name: a second call returns the first, with the first's buckets);
 * buckets up to 60 s unless given.
 */
export function secondsHistogram<L extends string>(metrics: ProcessMetrics, name: string, help: string, labelNames: readonly L[], buckets: readonly number[] = SECONDS): Histogram<L> {
  const existing = metrics.registry.getSingleMetric(name)
  if (existing) return existing as Histogram<L>
  return new Histogram({ name, help, labelNames, buckets: [...buckets], registers: [metrics.registry] })
}

/** A counter on the registry (one per name). */
export function counter<L extends string>(metrics: ProcessMetrics, name: string, help: string, labelNames: readonly L[]): Counter<L> {
  const existing = metrics.registry.getSingleMetric(name)
  if (existing) return existing as Counter<L>
  return new Counter({ name, help, labelNames, registers: [metrics.registry] })
}

/** How long a scrape waits for a collected gauge's values before it answers with the last ones. */
export const COLLECT_TIMEOUT_MS = 2000

/**
 * A gauge read when the registry is scraped (`collect` sets its values). A collection that fails or takes longer than
 * COLLECT_TIMEOUT_MS (its store away: BullMQ's commands wait for Redis to come back) leaves the last values, so the
 * scrape still answers, with every other metric; one still running is not started again (the scrapes of an outage
 * would pile up commands), and `svc_metrics_collect_failures_total{gauge}` counts the scrapes it failed.
 */
export function collectedGauge<L extends string>(
  metrics: ProcessMetrics,
  name: string,
  help: string,
  labelNames: readonly L[],
  collect: (gauge: Gauge<L>) => Promise<void>,
): Gauge<L> {
  // one counter per registry, whichever gauge registers first
  const failures =
    (metrics.registry.getSingleMetric('svc_metrics_collect_failures_total') as Counter<'gauge'> | undefined) ??
    counter(metrics, 'svc_metrics_collect_failures_total', 'scrapes whose collected gauge failed or timed out (its last values shown)', ['gauge'] as const)
  let running: Promise<boolean> | null = null
  return new Gauge({
    name,
    help,
    labelNames,
    registers: [metrics.registry],
    async collect() {
      running ??= collect(this).then(
        () => true,
        () => false,
      ).finally(() => {
        running = null
      })
      const collected = await pTimeout(running, { milliseconds: COLLECT_TIMEOUT_MS, fallback: () => false })
      if (!collected) failures.inc({ gauge: name })
    },
  })
}

/** What a MongoDB driver client emits with `monitorCommands: true` (mongoose: `connection.getClient()`). */
export interface CommandMonitor {
  on(event: 'commandSucceeded' | 'commandFailed', listener: (event: { commandName: string; duration: number }) => void): unknown
}

/** `svc_db_command_duration_seconds{command, outcome}` from the driver's command monitoring. */
export function observeDatabaseCommands(metrics: ProcessMetrics, client: CommandMonitor): void {
  const duration = secondsHistogram(metrics, 'svc_db_command_duration_seconds', 'database commands, by command and outcome', ['command', 'outcome'] as const)
  client.on('commandSucceeded', (e) => duration.observe({ command: e.commandName, outcome: 'ok' }, e.duration / 1000))
  client.on('commandFailed', (e) => duration.observe({ command: e.commandName, outcome: 'error' }, e.duration / 1000))
}
