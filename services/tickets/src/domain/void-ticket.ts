/**
 * The organizer voids a ticket (dashboard): its seat and its buyer's share return to sale, its status becomes
 * `voided`, and `ticket.voided` reaches the app. Once per ticket: the insert of its void decision (a reservation
 * outcome `void_<ticketId>`) decides among concurrent voids; every later step only writes values derived from the
 * ticket, so a void cut off in between is completed by the next one.
 */
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'
import { isDuplicateKeyError } from '../models'
import { writeTicketEvent } from './announce'
import { deleteUnitsById, deleteUnitsOf } from './capacity'
import { nowOf, type TicketsDomain } from './context'
import { organizersEvent } from './organizer'

export async function voidTicket(d: TicketsDomain, organizerDid: string, environment: Environment, ticketId: string): Promise<{ id: string; status: string }> {
  const ticket = await d.models.Ticket.findById(ticketId).lean()
  if (!ticket || ticket.environment !== environment) throw new ContractError('NotFound', 'no such ticket')
  await organizersEvent(d, organizerDid, environment, ticket.eventUri)
  if (ticket.status === 'voided') return { id: ticket._id, status: 'voided' }

  const now = nowOf(d)
  try {
    await d.models.ReservationOutcome.create({ _id: `void_${ticket._id}`, outcome: 'released', at: now })
  } catch (err) {
    // voided before (perhaps cut off): finish it
    if (!isDuplicateKeyError(err)) throw err
  }
  // a claim's ticket has a reservation of its own; a purchased one the units it was given from its hold's
  if (ticket.unitIds?.length) await deleteUnitsById(d, ticket.unitIds)
  else if (ticket.source === 'claim') await deleteUnitsOf(d, ticket.reservationId)
  const voidedAt = (await d.models.ReservationOutcome.findById(`void_${ticket._id}`).lean())?.at ?? now
  await writeTicketEvent(d, ticket, 'voided', voidedAt)
  await d.models.Ticket.updateOne({ _id: ticket._id }, { $set: { status: 'voided', voidedAt } })
  d.logger?.info({ ticketId: ticket._id, environment, appDid: ticket.appDid }, 'ticket voided by its organizer')
  return { id: ticket._id, status: 'voided' }
}
