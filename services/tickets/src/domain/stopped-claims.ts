/**
 * Free claims that stopped between their two writes: the attempt's units were kept, then the process died before
 * the ticket was inserted (claim-free-ticket.ts). A retry with the same key adopts them; when none comes, the sweep
 * finishes the claim as that retry would, once the attempt is older than CLAIM_ATTEMPT_SECONDS (a claim takes
 * milliseconds, so nothing in flight is touched):
 * - no ticket under the claim's id: it is inserted with the kept units and announced (`ticket.issued`);
 * - the ticket exists under another attempt's units (a duplicate of the claim won meanwhile): the stopped attempt's
 *   units are deleted, so its seat returns to sale.
 * Only a claim's units carry a ticket id (a hold's and the organizer's block's do not). The sweep looks back
 * STOPPED_CLAIM_WINDOW_MS, far more than a restart of the tickets process takes.
 */
import { findEach } from '../models'
import { deleteUnitsOf, KEPT_UNTIL } from './capacity'
import { CLAIM_ATTEMPT_SECONDS, claimedTicket, issue } from './claim-free-ticket'
import { nowOf, type TicketsDomain } from './context'

export const STOPPED_CLAIM_WINDOW_MS = 24 * 60 * 60 * 1000

export async function sweepStoppedClaims(d: TicketsDomain, limit = 100): Promise<{ issued: number; released: number }> {
  const now = nowOf(d).getTime()
  const seats = await d.models.CapacityUnit.find(
    {
      kind: 'seat',
      ticketId: { $ne: null },
      expiresAt: KEPT_UNTIL,
      createdAt: { $gt: new Date(now - STOPPED_CLAIM_WINDOW_MS), $lte: new Date(now - CLAIM_ATTEMPT_SECONDS * 1000) },
    },
    { reservationId: 1, ticketId: 1, tierId: 1, buyerDid: 1 },
  ).lean()
  if (seats.length === 0) return { issued: 0, released: 0 }
  const ticketIds = [...new Set(seats.map((s) => s.ticketId!))]
  const tickets = new Map((await findEach(ticketIds, (id) => d.models.Ticket.findById(id, { reservationId: 1 }).lean())).map((t) => [t._id, t.reservationId]))
  let issued = 0
  let released = 0
  for (const seat of seats.filter((s) => tickets.get(s.ticketId!) !== s.reservationId).slice(0, limit)) {
    if (tickets.has(seat.ticketId!)) {
      await deleteUnitsOf(d, seat.reservationId)
      released++
      continue
    }
    const tier = await d.models.Tier.findById(seat.tierId).lean()
    if (!tier || !seat.buyerDid) continue
    const ticket = claimedTicket({
      ticketId: seat.ticketId!,
      appDid: tier.appDid,
      environment: tier.environment,
      eventUri: tier.eventUri,
      tierId: tier._id,
      buyerDid: seat.buyerDid,
      reservationId: seat.reservationId,
      now: nowOf(d),
    })
    const { ticket: stored } = await issue(d, ticket)
    tickets.set(stored._id, stored.reservationId)
    if (stored.reservationId === seat.reservationId) issued++
    else {
      // a duplicate inserted the ticket first with its own units
      await deleteUnitsOf(d, seat.reservationId)
      released++
    }
  }
  return { issued, released }
}
