import { ContractError } from '@svc/errors'

/** test and live never see each other's data: every stored document and every request names one. */
export const ENVIRONMENTS = ['test', 'live'] as const
export type Environment = (typeof ENVIRONMENTS)[number]

export function isEnvironment(value: unknown): value is Environment {
  return (ENVIRONMENTS as readonly unknown[]).includes(value)
}

/** A caller's environment, or the contract's InvalidRequest. */
export function parseEnvironment(value: unknown): Environment {
  if (isEnvironment(value)) return value
  throw new ContractError('InvalidRequest', 'environment must be "test" or "live"')
}
