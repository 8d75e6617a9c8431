/** The refusals shared by the approval use cases. */
import { ContractError } from '@svc/errors'

/** A malformed request: nothing is written. */
export function invalid(message: string): never {
  throw new ContractError('InvalidRequest', message)
}

/** A move the request's state forbids. */
export function notAllowed(message: string): never {
  throw new ContractError('NotAllowed', message)
}
