/** A creator's payout onboarding from the dashboard. */
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'
import type { ActorsDomain } from './context'
import { setPayoutStatus } from './set-payout-status'
import type { ActorView } from './views'

/**
 * A creator completes payout onboarding from the dashboard. In test the built-in test processor verifies at once:
 * the payout account becomes `ready`. Live onboarding goes through the live processor, which is not configured
 * (NotAllowed). ActorNotFound when the creator has no actor in that environment.
 */
export async function completeTestPayoutOnboarding(d: ActorsDomain, did: string, environment: Environment): Promise<ActorView> {
  if (environment !== 'test') {
    throw new ContractError('NotAllowed', 'payout onboarding in live goes through the live processor, which is not configured')
  }
  return setPayoutStatus(d, { did, environment, status: 'ready' })
}
