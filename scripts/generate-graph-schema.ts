/**
 * Writes gateway/schema.graphql, the composed schema the gateway serves (test/graph-schema.ts).
 *   npm run generate          (the lexicon types and this)
 *   ... --check               exits 1 when the checked-in file differs, writes nothing
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { composeGraphSchema, GRAPH_SCHEMA_PATH } from '@svc/e2e/graph-schema'

async function main(): Promise<void> {
  const text = await composeGraphSchema()
  if (process.argv.includes('--check')) {
    let current = ''
    try {
      current = readFileSync(GRAPH_SCHEMA_PATH, 'utf8')
    } catch {
      // missing counts as different
    }
    if (current !== text) {
      process.stderr.write(`${GRAPH_SCHEMA_PATH} is out of date: run npm run generate\n`)
      process.exit(1)
    }
    process.stdout.write(`${GRAPH_SCHEMA_PATH} is up to date\n`)
    return
  }
  writeFileSync(GRAPH_SCHEMA_PATH, text)
  process.stdout.write(`wrote ${GRAPH_SCHEMA_PATH}\n`)
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack ?? err.message : String(err)}\n`)
  process.exit(1)
})
