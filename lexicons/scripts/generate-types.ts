/**
 * Writes src/generated/lexicon-types.ts from the checked-in lexicons (every document @svc/lexicons loads).
 *   npm run generate                        (or: npx tsx lexicons/scripts/generate-types.ts)
 *   ... --check                             exits 1 when the checked-in file differs, writes nothing
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { loadLexiconDocuments } from '../src'
import { generateLexiconTypes } from './lexicon-codegen'

export const GENERATED_TYPES_PATH = resolve(__dirname, '..', 'src', 'generated', 'lexicon-types.ts')

function main(): void {
  const text = generateLexiconTypes(loadLexiconDocuments())
  if (process.argv.includes('--check')) {
    let current = ''
    try {
      current = readFileSync(GENERATED_TYPES_PATH, 'utf8')
    } catch {
      // missing counts as different
    }
    if (current !== text) {
      process.stderr.write(`${GENERATED_TYPES_PATH} is out of date: run npm run generate\n`)
      process.exit(1)
    }
    process.stdout.write(`${GENERATED_TYPES_PATH} is up to date\n`)
    return
  }
  writeFileSync(GENERATED_TYPES_PATH, text)
  process.stdout.write(`wrote ${GENERATED_TYPES_PATH}\n`)
}

main()
