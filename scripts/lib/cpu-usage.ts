/**
 * CPU time by process, read from Linux's /proc, so a bench row can say where a run's CPU went: each component
 * (by the entry file its node process runs), FerretDB, PostgreSQL, Redis and the bench's own process (the load
 * generator, and for the delivery rows the in-process stack). Elsewhere than
 * Linux the snapshot is empty and the row prints no breakdown.
 */
import { readdirSync, readFileSync } from 'node:fs'

/** Seconds of CPU (user + system) used so far, by label. */
export type CpuSnapshot = Map<string, number>

/** What a process is, from its command line: the component whose main.ts it runs, or the program. */
function labelOf(pid: number, cmdline: string, comm: string): string | null {
  if (pid === process.pid) return 'bench process'
  const entry = /(?:services\/([a-z-]+)|(gateway)|(xrpc-adapter)|(workers))\/src\/main\.ts/.exec(cmdline)
  if (entry) return entry[1] ?? entry[2] ?? entry[3] ?? entry[4] ?? null
  if (comm === 'ferretdb') return 'FerretDB'
  if (comm === 'postgres') return 'PostgreSQL'
  if (comm.startsWith('redis-ser')) return 'Redis'
  return null
}

/** Clock ticks per second of /proc's times (USER_HZ, 100 on every Linux that matters). */
const TICKS = 100

export function cpuSnapshot(): CpuSnapshot {
  const snapshot: CpuSnapshot = new Map()
  let pids: string[]
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name))
  } catch {
    return snapshot
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      // the command name is in parentheses and may hold spaces; the fields after it are space-separated
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      const label = labelOf(Number(pid), readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' '), comm)
      if (!label) continue
      // fields after the name start at stat's third field: utime is the 14th, stime the 15th
      const seconds = (Number(fields[11]) + Number(fields[12])) / TICKS
      snapshot.set(label, (snapshot.get(label) ?? 0) + seconds)
    } catch {
      // the process ended meanwhile
    }
  }
  return snapshot
}

/** CPU milliseconds each label used since `before`, per `requests`, largest first (labels that used none left out). */
export function cpuPerRequest(before: CpuSnapshot, after: CpuSnapshot, requests: number): { label: string; ms: number }[] {
  return [...after.entries()]
    .map(([label, seconds]) => ({ label, ms: +(((seconds - (before.get(label) ?? 0)) * 1000) / requests).toFixed(2) }))
    .filter((r) => r.ms > 0)
    .sort((a, b) => b.ms - a.ms)
}
