/**
 * The layer rules of docs/architecture.md (who may import whom, no cycles, nothing in a service imports upward),
 * checked over the real import graph by dependency-cruiser with the rules in .dependency-cruiser.cjs.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'

const ROOT = join(__dirname, '..')
const SOURCES = ['packages', 'lexicons/src', 'services', 'gateway/src', 'xrpc-adapter/src', 'scripts', 'test']

interface Violation {
  from: string
  to: string
  rule: { name: string }
  cycle?: { name: string }[]
}

async function cruise(): Promise<{ violations: Violation[]; modules: number }> {
  const { stdout } = await promisify(execFile)(
    join(ROOT, 'node_modules', '.bin', 'depcruise'),
    ['--config', '.dependency-cruiser.cjs', '--output-type', 'json', '--no-progress', ...SOURCES],
    { cwd: ROOT, maxBuffer: 256 * 1024 * 1024 },
  ).catch((err: { stdout?: string }) => {
    // depcruise exits non-zero when it finds violations; its JSON report is still on stdout
    if (err.stdout) return { stdout: err.stdout }
    throw err
  })
  const report = JSON.parse(stdout) as { summary: { violations: Violation[]; totalCruised: number } }
  return { violations: report.summary.violations, modules: report.summary.totalCruised }
}

describe('layer rules', () => {
  it('hold over the whole source tree', async () => {
    const { violations, modules } = await cruise()
    expect(modules).toBeGreaterThan(200)
    const described = violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}${v.cycle ? ` (cycle ${v.cycle.map((c) => c.name).join(' → ')})` : ''}`)
    expect(described).toEqual([])
  })
})
