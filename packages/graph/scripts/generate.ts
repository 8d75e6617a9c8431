/**
 * Writes packages/graph/src/generated/ (codegen.ts).
 *   npm run generate          (everything generated)
 *   ... --check               exits 1 when a checked-in file differs, writes nothing
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { generateGraphTypes } from './codegen'

async function main(): Promise<void> {
  const files = await generateGraphTypes()
  const check = process.argv.includes('--check')
  let stale = 0
  for (const f of files) {
    let current = ''
    try {
      current = readFileSync(f.filename, 'utf8')
    } catch {
      // missing counts as different
    }
    if (current === f.content) continue
    stale++
    if (check) process.stderr.write(`${f.filename} is out of date: run npm run generate\n`)
    else {
      mkdirSync(dirname(f.filename), { recursive: true })
      writeFileSync(f.filename, f.content)
      process.stdout.write(`wrote ${f.filename}\n`)
    }
  }
  if (check && stale > 0) process.exit(1)
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
