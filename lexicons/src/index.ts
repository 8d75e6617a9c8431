/**
 * The checked-in Lexicon documents: one JSON file per NSID, stored as `lexicons/<nsid path>.json`
 * (for example `money/svc/app/getConfig.json` holds `money.svc.app.getConfig`). They are the source of truth
 * for the XRPC surface; the adapter validates parameters, inputs and outputs against `lexicons`.
 */
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative, resolve, sep } from 'node:path'
import { Lexicons, parseLexiconDoc, type LexiconDoc } from '@atproto/lexicon'

/** Absolute path of the lexicons folder (the workspace root, one level above `src/`). */
export const LEXICON_DIR: string = resolve(__dirname, '..')

const SKIPPED_DIRS = new Set(['node_modules', 'src', 'test', 'scripts'])
const SKIPPED_FILES = new Set(['package.json', 'tsconfig.json'])

/** Marker that starts the main def's description of a retired method (kept for forensic use, never served). */
export const RETIRED_MARKER = 'RETIRED:'

function listJsonFiles(dir: string, atRoot: boolean): string[] {
  const files: string[] = []
  const entries = readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))
  for (const entry of entries) {
    if (entry.name.startsWith('.')) continue
    const full = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (SKIPPED_DIRS.has(entry.name)) continue
      files.push(...listJsonFiles(full, false))
    } else if (entry.isFile() && entry.name.endsWith('.json')) {
      if (atRoot && SKIPPED_FILES.has(entry.name)) continue
      files.push(full)
    }
  }
  return files
}

/** The NSID a document at this path must carry: its path under LEXICON_DIR, dots for separators. */
export function nsidForPath(file: string): string {
  return relative(LEXICON_DIR, file).replace(/\.json$/, '').split(sep).join('.')
}

/**
 * Read and schema-check every Lexicon document under LEXICON_DIR (synchronously, fresh objects on each call).
 * Throws when a file is not a valid Lexicon document or its `id` differs from its path.
 */
export function loadLexiconDocuments(): LexiconDoc[] {
  return listJsonFiles(LEXICON_DIR, true).map((file) => {
    let raw: unknown
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'))
    } catch (err) {
      throw new Error(`${file}: not valid JSON: ${(err as Error).message}`)
    }
    let doc: LexiconDoc
    try {
      doc = parseLexiconDoc(raw)
    } catch (err) {
      throw new Error(`${file}: not a valid Lexicon document: ${(err as Error).message}`)
    }
    const expected = nsidForPath(file)
    if (doc.id !== expected) throw new Error(`${file}: id ${doc.id} does not match its path (${expected})`)
    return doc
  })
}

/** All documents, compiled once. `Lexicons.add` rewrites refs in place, so it gets its own copies. */
export const lexicons: Lexicons = new Lexicons(loadLexiconDocuments())

function mainDef(nsid: string) {
  return lexicons.getDef(nsid)
}

/** NSIDs whose main def's description starts with "RETIRED:"; they are never served (501 MethodNotImplemented). */
export const RETIRED_NSIDS: ReadonlySet<string> = new Set(
  [...lexicons]
    .filter((doc) => doc.defs.main?.description?.startsWith(RETIRED_MARKER) === true)
    .map((doc) => doc.id),
)

/** Whether the NSID is an XRPC query (GET) or procedure (POST); undefined for unknown NSIDs and non-methods. */
export function methodType(nsid: string): 'query' | 'procedure' | undefined {
  let def
  try {
    def = mainDef(nsid)
  } catch {
    return undefined
  }
  return def?.type === 'query' || def?.type === 'procedure' ? def.type : undefined
}

/** NSIDs of every loaded query and procedure, sorted. */
export function methodNsids(): string[] {
  return [...lexicons].filter((doc) => methodType(doc.id) !== undefined).map((doc) => doc.id).sort()
}

export type { LexiconDoc }
export { Lexicons }
