/** Query-string values decoded by the lexicon's parameter types, strictly (atproto's decoder turns "abc" into 0). */
import { ContractError } from '@svc/errors'

type ParamDef = { type: string; items?: { type: string } }
type MethodDef = { parameters?: { properties?: Record<string, ParamDef> } }

function decodeOne(name: string, type: string, raw: string): unknown {
  switch (type) {
    case 'integer': {
      if (!/^-?\d+$/.test(raw)) throw new ContractError('InvalidRequest', `${name} must be an integer`)
      return Number(raw)
    }
    case 'boolean':
      if (raw !== 'true' && raw !== 'false') throw new ContractError('InvalidRequest', `${name} must be true or false`)
      return raw === 'true'
    default:
      return raw
  }
}

export function decodeParams(def: MethodDef, query: Record<string, string | string[] | undefined>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  const props = def.parameters?.properties ?? {}
  for (const [name, raw] of Object.entries(query)) {
    const prop = props[name]
    if (!prop || raw === undefined) continue // unknown parameters are ignored, as atproto does
    const values = Array.isArray(raw) ? raw : [raw]
    if (prop.type === 'array') {
      out[name] = values.map((v) => decodeOne(name, prop.items?.type ?? 'string', v))
    } else {
      if (values.length > 1) throw new ContractError('InvalidRequest', `${name} must be given once`)
      out[name] = decodeOne(name, prop.type, values[0] as string)
    }
  }
  return out
}
