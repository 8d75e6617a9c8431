/**
 * The checks every tickets method starts with: the app's environment and its tickets module (the apps domain's
 * facts), then the event: an event's tiers belong to the first app its organizer configured them through, and no
 * other app may read or change them.
 */
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'
import type { TicketedEventDoc, TierDoc } from '../models'
import type { ServingTickets } from './context'
import { sharedRun } from '@svc/subgraph-server'

/** Bad input: InvalidRequest with what was wrong. */
export const invalid = (message: string): never => {
  throw new ContractError('InvalidRequest', message)
}

export const eventKey = (environment: Environment, eventUri: string): string => `${environment} ${eventUri}`

/** The environment the app acts in, with the tickets module on there (TicketsModuleDisabled otherwise). */
export async function ticketsEnvironment(d: ServingTickets, appDid: string, environment: string | null): Promise<Environment> {
  const access = await d.facts.ticketsAccess(appDid, environment)
  if (!access.ticketsEnabled) throw new ContractError('TicketsModuleDisabled', `the tickets module is off in the app's ${access.environment} configuration`)
  return access.environment
}

/**
 * The event as the app sees it: null when it has no tiers yet, AppUnauthorized when another app owns it. The read is
 * shared by concurrent requests (sharedRun).
 */
export async function appEvent(d: ServingTickets, appDid: string, environment: Environment, eventUri: string): Promise<TicketedEventDoc | null> {
  const key = eventKey(environment, eventUri)
  const event = await sharedRun(d.models, `event ${key}`, () => d.models.TicketedEvent.findById(key).lean())
  if (event && event.appDid !== appDid) throw new ContractError('AppUnauthorized', 'this event is ticketed through another app')
  return event
}

/** The event's tiers among `tierIds` (others, and other events' tiers, are left out); each read shared. */
export async function eventTiers(d: ServingTickets, event: Pick<TicketedEventDoc, '_id'>, tierIds: string[]): Promise<TierDoc[]> {
  const tiers: (TierDoc | null)[] = await Promise.all(tierIds.map((id) => sharedRun(d.models, `tier ${id}`, () => d.models.Tier.findById(id).lean<TierDoc>())))
  return tiers.filter((t): t is TierDoc => t !== null && t.eventKey === event._id)
}
