/** Tests of domain code: the ContractError a call fails with (anything else it throws is rethrown; success fails the test). */
import { ContractError } from '@svc/errors'

export async function contractError(p: Promise<unknown> | (() => unknown)): Promise<ContractError> {
  try {
    await (typeof p === 'function' ? p() : p)
  } catch (err) {
    if (err instanceof ContractError) return err
    throw err
  }
  throw new Error('expected a ContractError')
}
