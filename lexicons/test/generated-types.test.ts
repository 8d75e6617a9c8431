/**
 * The checked-in src/generated/lexicon-types.ts equals what the generator makes from today's lexicons, so the
 * adapter's and the SDK's types can never drift from the contract; plus the generator's own rules on small documents.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { loadLexiconDocuments, methodNsids, RETIRED_NSIDS } from '../src'
import { generateLexiconTypes } from '../scripts/lexicon-codegen'
import { METHOD_TYPES } from '../src/generated/lexicon-types'

const GENERATED = resolve(__dirname, '..', 'src', 'generated', 'lexicon-types.ts')

describe('generated lexicon types', () => {
  it('the checked-in file is exactly what the generator makes from the lexicons (run `npm run generate`)', () => {
    expect(readFileSync(GENERATED, 'utf8')).toBe(generateLexiconTypes(loadLexiconDocuments()))
  })

  it('METHOD_TYPES lists every active method with its kind, and no retired one', () => {
    const active = methodNsids().filter((n) => !RETIRED_NSIDS.has(n))
    expect(Object.keys(METHOD_TYPES).sort()).toEqual(active)
    expect(RETIRED_NSIDS.size).toBeGreaterThan(0)
    for (const retired of RETIRED_NSIDS) expect(Object.keys(METHOD_TYPES)).not.toContain(retired)
    expect(METHOD_TYPES['network.svc.payment.initiate']).toBe('procedure')
    expect(METHOD_TYPES['network.svc.payment.status']).toBe('query')
  })
})

describe('the generator', () => {
  const doc = {
    id: 'com.example.thing.doIt',
    defs: {
      main: {
        type: 'procedure',
        description: 'Do it.',
        parameters: { type: 'params', required: ['n'], properties: { n: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } } },
        input: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: ['kind', 'item'],
            nullable: ['note'],
            properties: {
              kind: { type: 'string', knownValues: ['a', 'b'] },
              mode: { type: 'string', enum: ['x', 'y'] },
              fixed: { type: 'boolean', const: true },
              item: { type: 'ref', ref: '#item' },
              note: { type: 'string' },
              'odd-key': { type: 'unknown' },
            },
          },
        },
      },
      item: { type: 'object', properties: { list: { type: 'array', items: { type: 'ref', ref: '#item' } } } },
    },
  }

  it('maps types, optionality, knownValues, enums, refs, nullable and odd keys', () => {
    const text = generateLexiconTypes([doc])
    expect(text).toContain('export interface ComExampleThingDoItParams {\n  n: number\n  tags?: Array<string>\n}')
    expect(text).toContain("  kind: 'a' | 'b' | (string & {})\n")
    expect(text).toContain("  mode?: 'x' | 'y'\n")
    expect(text).toContain('  fixed?: true\n')
    expect(text).toContain('  item: ComExampleThingDoItItem\n')
    expect(text).toContain('  note?: string | null\n')
    expect(text).toContain("  'odd-key'?: unknown\n")
    expect(text).toContain('export type ComExampleThingDoItOutput = undefined')
    expect(text).toContain('export interface ComExampleThingDoItItem {\n  list?: Array<ComExampleThingDoItItem>\n}')
    expect(text).toContain("  'com.example.thing.doIt': { type: 'procedure'; params: ComExampleThingDoItParams; input: ComExampleThingDoItInput; output: ComExampleThingDoItOutput }")
  })

  it('types a record as its value, led by the $type naming its collection; not a method', () => {
    const record = {
      id: 'com.example.note',
      defs: { main: { type: 'record', key: 'tid', description: 'A note.', record: { type: 'object', required: ['text'], properties: { text: { type: 'string' }, n: { type: 'integer' } } } } },
    }
    const text = generateLexiconTypes([doc, record])
    expect(text).toContain("/** A note. */\nexport interface ComExampleNote {\n  $type: 'com.example.note'\n  text: string\n  n?: number\n}")
    expect(text).not.toContain("'com.example.note': {")
    const empty = { id: 'com.example.empty', defs: { main: { type: 'record', key: 'tid', record: { type: 'object', properties: {} } } } }
    expect(() => generateLexiconTypes([empty])).toThrow(/a record without properties/)
  })

  it('leaves retired methods out and refuses refs into them, unresolvable refs and unsupported types', () => {
    const retired = { id: 'com.example.old', defs: { main: { type: 'query', description: 'RETIRED: gone' }, thing: { type: 'object', properties: {} } } }
    expect(generateLexiconTypes([doc, retired])).not.toContain('ComExampleOld')
    const usesRetired = { id: 'com.example.user', defs: { main: { type: 'query', output: { encoding: 'application/json', schema: { type: 'ref', ref: 'com.example.old#thing' } } } } }
    expect(() => generateLexiconTypes([usesRetired, retired])).toThrow(/retired/)
    const dangling = { id: 'com.example.dangling', defs: { main: { type: 'query', output: { encoding: 'application/json', schema: { type: 'ref', ref: '#nope' } } } } }
    expect(() => generateLexiconTypes([dangling])).toThrow(/unresolvable ref #nope/)
    const blob = { id: 'com.example.blob', defs: { main: { type: 'procedure', input: { encoding: 'application/json', schema: { type: 'object', properties: { b: { type: 'blob' } } } } } } }
    expect(() => generateLexiconTypes([blob])).toThrow(/blob is not supported/)
  })
})
