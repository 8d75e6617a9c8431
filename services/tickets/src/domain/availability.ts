/**
 * tickets.svc.getTicketAvailability: per tier, its capacity minus active holds minus issued tickets (the seats taken
 * now, lapsed holds released on the way), and 0 outside the sale window. Only the app that ticketed the event sees it.
 */
import { ContractError } from '@svc/errors'
import type { TierDoc } from '../models'
import { seatsTakenNow } from './capacity'
import { nowOf, type ServingTickets, type TicketsDomain } from './context'
import { appEvent, ticketsEnvironment } from './event-access'
import type { TicketAvailability } from '../generated/graph-types'

export function onSale(tier: Pick<TierDoc, 'salesStartAt' | 'salesEndAt'>, now: Date): boolean {
  return (!tier.salesStartAt || tier.salesStartAt <= now) && (!tier.salesEndAt || now < tier.salesEndAt)
}

/** Seats of a tier that can be held or claimed now (blocked seats count as taken). */
export async function availableSeats(d: TicketsDomain, tier: Pick<TierDoc, '_id' | 'seatRange' | 'salesStartAt' | 'salesEndAt'>): Promise<number> {
  if (!onSale(tier, nowOf(d))) return 0
  return Math.max(0, tier.seatRange - (await seatsTakenNow(d, tier._id, tier.seatRange, { shared: true })).count)
}

export async function getTicketAvailability(d: ServingTickets, appDid: string, environment: string | null, eventUri: string): Promise<TicketAvailability> {
  if (eventUri === '') throw new ContractError('EventRequired', 'the eventUri parameter (AT-URI of the event) is required')
  const env = await ticketsEnvironment(d, appDid, environment)
  const event = await appEvent(d, appDid, env, eventUri)
  if (!event) return { eventUri, items: [] }
  const tiers = await d.models.Tier.find({ eventKey: event._id }).sort({ position: 1 }).lean()
  const items = await Promise.all(tiers.map(async (t) => ({ ticketTypeId: t._id, available: await availableSeats(d, t) })))
  return { eventUri, items }
}
