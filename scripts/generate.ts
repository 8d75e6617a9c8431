/**
 * `npm run generate`: writes every generated file, in order, each step reading the one before:
 *   1. lexicons/src/generated/lexicon-types.ts   the XRPC surface's types, from the lexicons (adapter and SDK)
 *   2. gateway/schema.graphql                    the composed schema, from the subgraphs' SDL
 *   3. packages/graph/src/generated/             the typed GraphQL documents, from the documents and that schema
 *   4. services/<name>/src/generated/graph-types.ts  each subgraph's own types (its views), from its SDL
 * `--check` writes nothing and exits 1 naming every file that differs. Each file also has a test that fails on drift.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { composeGraphSchema, GRAPH_SCHEMA_PATH, SUBGRAPHS } from '@svc/e2e/graph-schema'
import { generateGraphTypes } from '@svc/graph/scripts/codegen'
import { generateSubgraphTypes } from '@svc/graph/scripts/subgraph-types'
import { loadLexiconDocuments } from '@svc/lexicons'
import { generateLexiconTypes, LEXICON_TYPES_PATH } from '@svc/lexicons/codegen'

interface Generated {
  filename: string
  content: string
}

const STEPS: { name: string; make(): Promise<Generated[]> }[] = [
  { name: 'lexicon types', make: async () => [{ filename: LEXICON_TYPES_PATH, content: generateLexiconTypes(loadLexiconDocuments()) }] },
  { name: 'composed schema', make: async () => [{ filename: GRAPH_SCHEMA_PATH, content: await composeGraphSchema() }] },
  { name: 'typed GraphQL documents', make: generateGraphTypes },
  { name: 'subgraph types', make: () => generateSubgraphTypes(SUBGRAPHS) },
]

function current(filename: string): string {
  try {
    return readFileSync(filename, 'utf8')
  } catch {
    return '' // missing counts as different
  }
}

async function main(): Promise<void> {
  const check = process.argv.includes('--check')
  const stale: string[] = []
  for (const step of STEPS) {
    for (const file of await step.make()) {
      if (current(file.filename) === file.content) continue
      stale.push(file.filename)
      if (check) continue
      mkdirSync(dirname(file.filename), { recursive: true })
      writeFileSync(file.filename, file.content)
      process.stdout.write(`wrote ${file.filename} (${step.name})\n`)
    }
  }
  if (check && stale.length > 0) {
    process.stderr.write(`out of date, run npm run generate:\n${stale.map((f) => `  ${f}`).join('\n')}\n`)
    process.exit(1)
  }
  if (stale.length === 0) process.stdout.write('every generated file is up to date\n')
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
  process.exit(1)
})
