/**
 * The buyer's tickets as their pages show them, asked for by the checkout host as the service `checkout`:
 * - a paid hold's, on its checkout page once paid (the checkout's browser token is the buyer's capability);
 * - one ticket's, on its own page (`ticket.url`, answered by claimFreeTicket): its page token is the capability.
 * Each carries its scan token, which the page draws as a QR code (docs/tickets.md, "The buyer's tickets").
 */
import { timingSafeEqual } from 'node:crypto'
import type { BuyerTicket } from '../generated/graph-types'
import { ticketIdOfPageToken } from '@svc/vocabulary'
import { findEach, type TicketDoc } from '../models'
import type { TicketsDomain } from './context'

async function asBuyerTickets(d: TicketsDomain, tickets: TicketDoc[]): Promise<BuyerTicket[]> {
  const tiers = await findEach(tickets.map((t) => t.tierId), (id) => d.models.Tier.findById(id, { name: 1 }).lean())
  const names = new Map(tiers.map((t) => [t._id, t.name]))
  return tickets
    .sort((a, b) => (names.get(a.tierId) ?? '').localeCompare(names.get(b.tierId) ?? '') || a._id.localeCompare(b._id))
    .map((t) => ({
      id: t._id,
      environment: t.environment,
      status: t.status,
      ticketTypeId: t.tierId,
      tierName: names.get(t.tierId) ?? '',
      eventUri: t.eventUri,
      scanToken: t.secret ?? null,
    }))
}

export async function ticketsOfHold(d: TicketsDomain, holdId: string): Promise<BuyerTicket[]> {
  return asBuyerTickets(d, await d.models.Ticket.find({ holdId }).lean())
}

/** The ticket a page token opens, or null: the token names its ticket, and must equal the one stored on it. */
export async function ticketOfPage(d: TicketsDomain, pageToken: string): Promise<BuyerTicket | null> {
  const ticketId = ticketIdOfPageToken(pageToken)
  const ticket = ticketId ? await d.models.Ticket.findById(ticketId).lean() : null
  if (!ticket?.pageToken || !sameToken(ticket.pageToken, pageToken)) return null
  return (await asBuyerTickets(d, [ticket]))[0] ?? null
}

function sameToken(stored: string, given: string): boolean {
  const a = Buffer.from(stored)
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b)
}
