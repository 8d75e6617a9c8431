/** Contract errors more than one checkout use case throws. */
import { ContractError } from '@svc/errors'

export function appUnauthorized(message: string): never {
  throw new ContractError('AppUnauthorized', message)
}

export const checkoutClosed = () => new ContractError('CheckoutClosed', 'this checkout was already paid or closed')
