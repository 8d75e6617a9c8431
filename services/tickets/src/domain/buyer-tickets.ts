/**
 * The buyer's tickets as their page shows them: a paid hold's, on its checkout page once paid (the checkout host
 * asks, as the service `checkout`, with the checkout's browser token as the buyer's capability). Each carries its
 * scan token, which the page draws as a QR code (docs/tickets.md, "The buyer's tickets").
 */
import type { BuyerTicket } from '../generated/graph-types'
import type { TicketsDomain } from './context'

export async function ticketsOfHold(d: TicketsDomain, holdId: string): Promise<BuyerTicket[]> {
  const tickets = await d.models.Ticket.find({ holdId }).lean()
  const tiers = await d.models.Tier.find({ _id: { $in: [...new Set(tickets.map((t) => t.tierId))] } }, { name: 1 }).lean()
  const names = new Map(tiers.map((t) => [t._id, t.name]))
  return tickets
    .sort((a, b) => (names.get(a.tierId) ?? '').localeCompare(names.get(b.tierId) ?? '') || a._id.localeCompare(b._id))
    .map((t) => ({
      id: t._id,
      status: t.status,
      ticketTypeId: t.tierId,
      tierName: names.get(t.tierId) ?? '',
      eventUri: t.eventUri,
      scanToken: t.secret ?? null,
    }))
}
