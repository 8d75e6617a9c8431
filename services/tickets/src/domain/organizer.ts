/**
 * The organizer's view of their events, on the dashboard (signed in as the organizer's DID, in one environment):
 * each event's tiers with what is sold, held and left, and the tickets with their buyers. An event is the
 * organizer's when its AT-URI's authority is them (configure-tiers.ts checked it); another's is NotFound.
 */
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'
import { findEach, type TicketedEventDoc } from '../models'
import { takenSeats } from './capacity'
import { blockReservation, tierCapacity } from './configure-tiers'
import type { TicketsDomain } from './context'
import { eventKey } from './event-access'

/** Tickets that hold their seat: issued or checked in (a voided one gave it back). */
const HOLDS_A_SEAT = ['issued', 'checked-in']

export async function organizerEvents(d: TicketsDomain, organizerDid: string, environment: Environment) {
  const events = await d.models.TicketedEvent.find({ organizerDid, environment }).sort({ createdAt: -1 }).limit(200).lean()
  return events.map((e) => ({ eventUri: e.eventUri, appDid: e.appDid, createdAt: e.createdAt.toISOString() }))
}

async function organizersEvent(d: TicketsDomain, organizerDid: string, environment: Environment, eventUri: string): Promise<TicketedEventDoc> {
  const event = await d.models.TicketedEvent.findById(eventKey(environment, eventUri)).lean()
  if (!event || event.organizerDid !== organizerDid) throw new ContractError('NotFound', 'no such event of yours in this environment')
  return event
}

export async function organizerEvent(d: TicketsDomain, organizerDid: string, environment: Environment, eventUri: string) {
  const event = await organizersEvent(d, organizerDid, environment, eventUri)
  const tiers = await d.models.Tier.find({ eventKey: event._id }).sort({ position: 1 }).lean()
  const tickets = (await findEach(tiers.map((t) => t._id), (tierId) => d.models.Ticket.find({ tierId }).lean())).sort(
    (a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a._id.localeCompare(b._id),
  )
  const names = new Map(tiers.map((t) => [t._id, t.name]))
  const tierViews = await Promise.all(
    tiers.map(async (t) => {
      const capacity = await tierCapacity(d, t)
      const taken = (await takenSeats(d, t._id)).filter((u) => u.reservationId !== blockReservation(t._id)).length
      const sold = tickets.filter((x) => x.tierId === t._id && HOLDS_A_SEAT.includes(x.status)).length
      return { ticketTypeId: t._id, name: t.name, priceAmount: t.priceAmount, currency: t.currency, capacity, sold, held: Math.max(0, taken - sold), available: Math.max(0, capacity - taken) }
    }),
  )
  return {
    eventUri: event.eventUri,
    appDid: event.appDid,
    environment: event.environment,
    tiers: tierViews,
    tickets: tickets.map((x) => ({
      id: x._id,
      ticketTypeId: x.tierId,
      tierName: names.get(x.tierId) ?? '',
      buyerDid: x.buyerDid,
      status: x.status,
      source: x.source,
      appOrderId: x.appOrderId ?? null,
      issuedAt: x.createdAt.toISOString(),
    })),
  }
}
