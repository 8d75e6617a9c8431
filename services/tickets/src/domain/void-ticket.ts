/**
 * The organizer voids a ticket (dashboard): its status becomes `voided`, its seat and its buyer's share return to
 * sale, and `ticket.voided` reaches the app. Once per ticket: the insert of its void decision (a reservation outcome
 * `void_<ticketId>`) decides among concurrent voids and gives the void its time. The ticket stops being valid before
 * its seat returns, so a void cut off in between leaves a seat out of sale, never a seat on sale whose old ticket is
 * still valid; `voidPending` marks such a ticket until its seat is back, and the next void of it or the tickets sweep
 * finishes it (finishVoid). A ticket never announced (its claim stopped before its `ticket.issued`) is announced
 * first, so the app is told of its issue too (deliveries are not ordered: `ticket.voided` carries the fields).
 */
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'
import { isDuplicateKeyError, type TicketDoc } from '../models'
import { writeTicketEvent } from './announce'
import { deleteUnitsById, deleteUnitsOf } from './capacity'
import { nowOf, type TicketsDomain } from './context'
import { eventKey } from './event-access'

export async function voidTicket(d: TicketsDomain, organizerDid: string, environment: Environment, ticketId: string): Promise<{ id: string; status: string }> {
  const ticket = await d.models.Ticket.findById(ticketId).lean()
  // another organizer's ticket is answered as a missing one: the answer never says that a ticket id exists
  const event = ticket && ticket.environment === environment ? await d.models.TicketedEvent.findById(eventKey(environment, ticket.eventUri)).lean() : null
  if (!ticket || !event || event.organizerDid !== organizerDid) throw new ContractError('NotFound', 'no such ticket')
  if (ticket.status === 'voided' && !ticket.voidPending) return { id: ticket._id, status: 'voided' }

  try {
    await d.models.ReservationOutcome.create({ _id: `void_${ticket._id}`, outcome: 'released', at: nowOf(d) })
  } catch (err) {
    // voided before (perhaps cut off): finish it
    if (!isDuplicateKeyError(err)) throw err
  }
  const voidedAt = (await d.models.ReservationOutcome.findById(`void_${ticket._id}`).lean())?.at ?? nowOf(d)
  if (ticket.status !== 'voided') await d.models.Ticket.updateOne({ _id: ticket._id }, { $set: { status: 'voided', voidedAt, voidPending: true } })
  await finishVoid(d, { ...ticket, voidedAt })
  d.logger?.info({ ticketId: ticket._id, environment, appDid: ticket.appDid }, 'ticket voided by its organizer')
  return { id: ticket._id, status: 'voided' }
}

/** The rest of a void once its ticket is `voided`: its seat back on sale, the app told, the mark cleared. */
async function finishVoid(d: TicketsDomain, ticket: TicketDoc & { voidedAt: Date }): Promise<void> {
  // a claim's ticket has a reservation of its own; a purchased one the units it was given from its hold's
  if (ticket.unitIds?.length) await deleteUnitsById(d, ticket.unitIds)
  else if (ticket.source === 'claim') await deleteUnitsOf(d, ticket.reservationId)
  if (!ticket.announced) await writeTicketEvent(d, ticket, 'issued', ticket.createdAt)
  await writeTicketEvent(d, ticket, 'voided', ticket.voidedAt)
  // the status again: on FerretDB an announcement's write that read the ticket before the void can have put
  // `issued` back (docs/decisions.md), and the seat is on sale again by now
  await d.models.Ticket.updateOne({ _id: ticket._id }, { $set: { status: 'voided', voidedAt: ticket.voidedAt, voidPending: false, announced: true } })
}

/** Finishes the voids cut off after their ticket became `voided` (see above); returns how many. */
export async function sweepPendingVoids(d: TicketsDomain, limit = 100): Promise<number> {
  const pending = await d.models.Ticket.find({ voidPending: true }).limit(limit).lean()
  for (const ticket of pending) await finishVoid(d, { ...ticket, voidedAt: ticket.voidedAt ?? nowOf(d) })
  return pending.length
}
