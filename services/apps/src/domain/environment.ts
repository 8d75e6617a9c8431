import { ContractError } from '@svc/errors'

export type Environment = 'test' | 'live'

export function parseEnvironment(value: unknown): Environment {
  if (value === 'test' || value === 'live') return value
  throw new ContractError('InvalidRequest', 'environment must be "test" or "live"')
}
