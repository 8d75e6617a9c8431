/**
 * A readiness check on another process of the service: ready when that process's `/readyz` answers 200. The adapter
 * takes no work before the gateway has composed the schema from every subgraph (its `/livez` answers as soon as it
 * runs, while every request would still fail). With the metrics token, a failed check says which of the other
 * process's checks failed, and why.
 */
import type { ReadinessCheck } from './routes'

export function upstreamReady(baseUrl: string, metricsToken: string): ReadinessCheck {
  const url = new URL('/readyz', baseUrl)
  return async () => {
    // the check gives up after 2 s; the request is dropped then too, so slow checks do not pile up
    const res = await fetch(url, { headers: { authorization: `Bearer ${metricsToken}` }, signal: AbortSignal.timeout(2000) })
    if (res.ok) return
    const body = (await res.json().catch(() => null)) as { checks?: Record<string, string> } | null
    const failed = Object.entries(body?.checks ?? {}).filter(([, result]) => result !== 'ok')
    throw new Error(`answered ${res.status}${failed.length > 0 ? `: ${failed.map(([name, result]) => `${name}: ${result}`).join('; ')}` : ''}`)
  }
}
