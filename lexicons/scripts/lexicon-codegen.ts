/**
 * Lexicon → TypeScript: per active method `<Name>Params`, `<Name>Input`, `<Name>Output` (plus one type per other
 * def of the document, `<Name><Def>`), per record `<Name>` (its value, with its `$type`), and the `Methods` map from
 * NSID to {type, params, input, output}.
 * Pure (documents in, source text out) so a test can regenerate in memory and compare with the checked-in file.
 *
 * Supported: record, object, params, ref (local `#def`, `nsid`, `nsid#def`), union, array, string, integer, boolean,
 * unknown, token; knownValues become open unions (`'a' | 'b' | (string & {})`), enum and const closed ones.
 * Anything else (blob, bytes, cid-link, subscription) throws, so a new lexicon cannot be typed wrongly
 * in silence. Methods whose main def's description starts with `RETIRED:` are left out.
 */

import { resolve } from 'node:path'
import { RETIRED_MARKER } from '../src'

/** Where the generated module lives (`@svc/lexicons/types`). */
export const LEXICON_TYPES_PATH = resolve(__dirname, '..', 'src', 'generated', 'lexicon-types.ts')

/** The parts of a Lexicon document the generator reads (structurally compatible with @atproto/lexicon's LexiconDoc). */
export interface CodegenDoc {
  id: string
  defs: Record<string, unknown>
}

type Def = Record<string, unknown> & { type?: string; description?: string }

const IDENT_RE = /^[A-Za-z_$][A-Za-z0-9_$]*$/

export function pascalCase(value: string): string {
  return value
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('')
}

/** The TypeScript name of a def: `money.svc.app.getConfig#webhook` → `MoneySvcAppGetConfigWebhook`. */
export function typeName(nsid: string, def: string): string {
  return pascalCase(nsid) + (def === 'main' ? '' : pascalCase(def))
}

function isRetired(doc: CodegenDoc): boolean {
  const main = doc.defs.main as Def | undefined
  return typeof main?.description === 'string' && main.description.startsWith(RETIRED_MARKER)
}

function isMethod(doc: CodegenDoc): boolean {
  const main = doc.defs.main as Def | undefined
  return main?.type === 'query' || main?.type === 'procedure'
}

function docComment(text: unknown, indent: string): string {
  if (typeof text !== 'string' || text.trim() === '') return ''
  const lines = text.replace(/\*\//g, '*\\/').split('\n')
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`
  return `${indent}/**\n${lines.map((l) => `${indent} * ${l}`.trimEnd()).join('\n')}\n${indent} */\n`
}

const literal = (v: unknown): string => (typeof v === 'string' ? `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'` : JSON.stringify(v))

class Generator {
  private readonly docs: Map<string, CodegenDoc>

  constructor(docs: CodegenDoc[]) {
    this.docs = new Map(docs.map((d) => [d.id, d]))
  }

  private resolveRef(ref: string, nsid: string): string {
    const [refNsid, refDef] = ref.startsWith('#') ? [nsid, ref.slice(1)] : ref.includes('#') ? (ref.split('#', 2) as [string, string]) : [ref, 'main']
    const doc = this.docs.get(refNsid)
    if (!doc || !(refDef in doc.defs)) throw new Error(`${nsid}: unresolvable ref ${ref}`)
    if (isRetired(doc) && refNsid !== nsid) throw new Error(`${nsid}: ref ${ref} points into a retired document`)
    if (refDef === 'main' && isMethod(doc)) throw new Error(`${nsid}: ref ${ref} points at a method`)
    return typeName(refNsid, refDef)
  }

  private refDef(ref: string, nsid: string): { def: Def; nsid: string } {
    this.resolveRef(ref, nsid)
    const [refNsid, refDef] = ref.startsWith('#') ? [nsid, ref.slice(1)] : ref.includes('#') ? (ref.split('#', 2) as [string, string]) : [ref, 'main']
    return { def: this.docs.get(refNsid)!.defs[refDef] as Def, nsid: refNsid }
  }

  /** The keys an object accepts, nested through refs to objects; `true` marks any other value. */
  keyShape(def: Def, nsid: string, depth = 0, expanding: ReadonlySet<unknown> = new Set()): string {
    if (depth > 8) throw new Error(`${nsid}: input objects nest too deep for a key shape`)
    if (def.type === 'ref') {
      const target = this.refDef(String(def.ref), nsid)
      // a def that contains itself (through an array) is not checked below its first level
      if (expanding.has(target.def)) return 'true'
      return this.keyShape(target.def, target.nsid, depth + 1, new Set([...expanding, target.def]))
    }
    // an array of objects: each element has the shape of its items
    if (def.type === 'array' && def.items) return this.keyShape(def.items as Def, nsid, depth + 1, expanding)
    if (def.type !== 'object') return 'true'
    const props = Object.entries((def.properties ?? {}) as Record<string, Def>)
    const entries = props.map(([name, prop]) => `${IDENT_RE.test(name) ? name : literal(name)}: ${this.keyShape(prop, nsid, depth + 1, expanding)}`)
    return `{ ${entries.join(', ')} }`
  }

  /** The TypeScript type expression of a schema node. */
  type(def: Def, nsid: string, indent: string): string {
    switch (def.type) {
      case 'string':
      case 'integer':
      case 'boolean': {
        const base = def.type === 'integer' ? 'number' : def.type
        if ('const' in def) return literal(def.const)
        if (Array.isArray(def.enum)) return def.enum.map(literal).join(' | ')
        if (def.type === 'string' && Array.isArray(def.knownValues) && def.knownValues.length > 0) {
          return [...def.knownValues.map(literal), '(string & {})'].join(' | ')
        }
        return base
      }
      case 'unknown':
        return 'unknown'
      case 'token':
        return literal(nsid)
      case 'array': {
        const items = this.type(def.items as Def, nsid, indent)
        return `Array<${items}>`
      }
      case 'ref':
        return this.resolveRef(String(def.ref), nsid)
      case 'union': {
        const refs = (def.refs as string[]).map((r) => this.resolveRef(r, nsid))
        if (def.closed !== true) refs.push('{ $type: string; [key: string]: unknown }')
        return refs.join(' | ')
      }
      case 'object':
      case 'params':
        return this.objectBody(def, nsid, indent)
      case 'record': {
        // the record's value as stored and encoded: its object, led by the `$type` naming the collection
        const body = this.objectBody(def.record as Def, nsid, indent)
        if (!body.startsWith('{')) throw new Error(`${nsid}: a record without properties`)
        return body.replace('{\n', `{\n${indent}  $type: ${literal(nsid)}\n`)
      }
      default:
        throw new Error(`${nsid}: lexicon type ${String(def.type)} is not supported by the lexicon type generator`)
    }
  }

  /** `{ ... }` for an object or params node; `Record<string, never>` when it has no properties. */
  objectBody(def: Def, nsid: string, indent: string): string {
    const props = (def.properties ?? {}) as Record<string, Def>
    const names = Object.keys(props)
    if (names.length === 0) return 'Record<string, never>'
    const required = new Set((def.required as string[] | undefined) ?? [])
    const nullable = new Set((def.nullable as string[] | undefined) ?? [])
    const inner = indent + '  '
    const lines = names.map((name) => {
      const prop = props[name]!
      let t = this.type(prop, nsid, inner)
      if (nullable.has(name)) t = `${t} | null`
      const key = IDENT_RE.test(name) ? name : literal(name)
      return `${docComment(prop.description, inner)}${inner}${key}${required.has(name) ? '' : '?'}: ${t}`
    })
    return `{\n${lines.join('\n')}\n${indent}}`
  }

  /** `export interface X {...}` for objects, `export type X = ...` otherwise. */
  declaration(name: string, def: Def | undefined, nsid: string, description?: unknown): string {
    const comment = docComment(description ?? def?.description, '')
    if (def === undefined) return `${comment}export type ${name} = undefined\n`
    const body = this.type(def, nsid, '')
    if ((def.type === 'object' || def.type === 'params' || def.type === 'record') && body.startsWith('{')) return `${comment}export interface ${name} ${body}\n`
    return `${comment}export type ${name} = ${body}\n`
  }

  generate(): string {
    const docs = [...this.docs.values()].filter((d) => !isRetired(d)).sort((a, b) => a.id.localeCompare(b.id))
    const seen = new Set<string>()
    const claim = (name: string, where: string) => {
      if (seen.has(name)) throw new Error(`${where}: generated type name ${name} is used twice`)
      seen.add(name)
      return name
    }
    const out: string[] = []
    const methods: { nsid: string; type: string; description: unknown; names: [string, string, string] }[] = []
    const inputKeys: string[] = []
    for (const doc of docs) {
      const main = doc.defs.main as Def | undefined
      out.push(`// ${doc.id}\n`)
      if (main && isMethod(doc)) {
        const base = typeName(doc.id, 'main')
        const names: [string, string, string] = [claim(`${base}Params`, doc.id), claim(`${base}Input`, doc.id), claim(`${base}Output`, doc.id)]
        const input = main.input as { schema?: Def; description?: string } | undefined
        const output = main.output as { schema?: Def; description?: string } | undefined
        out.push(this.declaration(names[0], (main.parameters as Def | undefined) ?? { type: 'params', properties: {} }, doc.id, `Query parameters of ${doc.id}.`))
        out.push(
          input ? this.declaration(names[1], input.schema ?? { type: 'unknown' }, doc.id) : `/** ${doc.id} takes no input body. */\nexport type ${names[1]} = undefined\n`,
        )
        out.push(
          output ? this.declaration(names[2], output.schema ?? { type: 'unknown' }, doc.id) : `/** ${doc.id} has no output body. */\nexport type ${names[2]} = undefined\n`,
        )
        methods.push({ nsid: doc.id, type: String(main.type), description: main.description, names })
        if (input?.schema?.type === 'object' || input?.schema?.type === 'ref') inputKeys.push(`  '${doc.id}': ${this.keyShape(input.schema, doc.id)},`)
      }
      for (const [defName, def] of Object.entries(doc.defs).sort(([a], [b]) => a.localeCompare(b))) {
        if (defName === 'main') {
          if (!isMethod(doc)) out.push(this.declaration(claim(typeName(doc.id, 'main'), doc.id), def as Def, doc.id))
          continue
        }
        out.push(this.declaration(claim(typeName(doc.id, defName), doc.id), def as Def, doc.id))
      }
      out.push('\n')
    }

    const header =
      '/**\n' +
      ' * Generated by lexicons/scripts/lexicon-codegen.ts from the checked-in lexicons: do not edit by hand.\n' +
      ' * The one typed form of the XRPC surface: the XRPC adapter\'s handlers and the SDK both use it.\n' +
      ' * Regenerate with `npm run generate`; lexicons/test/generated-types.test.ts fails when this file drifts.\n' +
      ` * Active methods: ${methods.length}. Retired methods (never served, left out): ${
        [...this.docs.values()].filter(isRetired).map((d) => d.id).sort().join(', ') || 'none'
      }.\n` +
      ' */\n\n'

    const map =
      '/** Every active XRPC method: its kind, query parameters, input body and output body. */\n' +
      'export interface Methods {\n' +
      methods
        .map(
          (m) =>
            `${docComment(m.description, '  ')}  '${m.nsid}': { type: '${m.type}'; params: ${m.names[0]}; input: ${m.names[1]}; output: ${m.names[2]} }`,
        )
        .join('\n') +
      '\n}\n\n' +
      '/** The NSID of an active method. */\n' +
      'export type MethodNsid = keyof Methods\n\n' +
      '/** Query (GET) or procedure (POST), per active method. */\n' +
      'export const METHOD_TYPES: { readonly [N in MethodNsid]: Methods[N][\'type\'] } = {\n' +
      methods.map((m) => `  '${m.nsid}': '${m.type}',`).join('\n') +
      '\n}\n\n' +
      '/** The keys a body may carry, nested (an array\'s shape is its elements\'); `true` marks a leaf. */\n' +
      'export type KeyShape = { readonly [key: string]: true | KeyShape }\n\n' +
      '/** The keys each method\'s input body declares (refs to objects followed), for methods that refuse any other key. */\n' +
      'export const INPUT_KEYS = {\n' +
      inputKeys.join('\n') +
      '\n} as const satisfies { readonly [N in MethodNsid]?: KeyShape }\n'

    return header + out.join('') + map
  }
}

/** The text of src/generated/lexicon-types.ts for these documents. */
export function generateLexiconTypes(docs: readonly CodegenDoc[]): string {
  return new Generator([...docs]).generate()
}
