/**
 * The checks every tickets method starts with: the app's environment and its tickets module (the apps domain's
 * facts), then the event: an event's tiers belong to the first app its organizer configured them through, and no
 * other app may read or change them.
 */
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'
import type { TicketedEventDoc } from '../models'
import type { ServingTickets } from './context'

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

/** The event as the app sees it: null when it has no tiers yet, AppUnauthorized when another app owns it. */
export async function appEvent(d: ServingTickets, appDid: string, environment: Environment, eventUri: string): Promise<TicketedEventDoc | null> {
  const event = await d.models.TicketedEvent.findById(eventKey(environment, eventUri)).lean()
  if (event && event.appDid !== appDid) throw new ContractError('AppUnauthorized', 'this event is ticketed through another app')
  return event
}
