import { ContractError } from '@svc/errors'
import type { KeyShape } from '@svc/lexicons/types'

/**
 * Lexicon objects tolerate unknown properties; where the contract says "nothing else is accepted", this refuses them.
 * The shape is the lexicon's own (INPUT_KEYS, generated from the method's input schema).
 */
export function assertOnlyKeys(value: unknown, shape: KeyShape, refusal: (path: string) => string, path = ''): void {
  if (Array.isArray(value)) {
    value.forEach((item, i) => assertOnlyKeys(item, shape, refusal, `${path}[${i}]`))
    return
  }
  if (typeof value !== 'object' || value === null) return
  for (const [key, child] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key
    // own keys only: `toString` or `constructor` must not find Object.prototype's
    const allowed = Object.hasOwn(shape, key) ? shape[key] : undefined
    if (!allowed) throw new ContractError('InvalidRequest', refusal(at))
    if (allowed !== true) assertOnlyKeys(child, allowed, refusal, at)
  }
}
