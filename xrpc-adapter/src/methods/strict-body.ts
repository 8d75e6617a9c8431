import { ContractError } from '@svc/errors'

/** The keys a body may carry, nested; `true` marks a leaf. */
export type KeyShape = { [key: string]: true | KeyShape }

/** Lexicon objects tolerate unknown properties; where the contract says "nothing else is accepted", this refuses them. */
export function assertOnlyKeys(value: unknown, shape: KeyShape, refusal: (path: string) => string, path = ''): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return
  for (const [key, child] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key
    const allowed = shape[key]
    if (!allowed) throw new ContractError('InvalidRequest', refusal(at))
    if (allowed !== true) assertOnlyKeys(child, allowed, refusal, at)
  }
}
