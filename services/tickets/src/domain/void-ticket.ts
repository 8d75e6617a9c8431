/**
 * The organizer voids a ticket (dashboard): its status becomes `voided`, its seat and its buyer's share return to
 * sale, and `ticket.voided` reaches the app. Once per ticket: the insert of its void decision (a reservation outcome
 * `void_<ticketId>`) decides among concurrent voids and gives the void its time. The ticket stops being valid before
 * its seat returns, so a void cut off in between leaves a seat out of sale, never a seat on sale whose old ticket is
 * still valid. The decision stays `pending` until the ticket reads `voided` with its seat back (the ticket's own
 * `voidPending` can be written over by an announcement's write on FerretDB), and the next void of it or the tickets
 * sweep finishes it (completeVoid): a void cut off anywhere after its decision ends voided. An announcement's write
 * that lands after the whole void is undone by the announcement itself (announce.ts). A ticket never announced (its
 * claim or its hold's settlement stopped before its `ticket.issued`) is announced first, so the app is told of its
 * issue too (deliveries are not ordered: `ticket.voided` carries the fields).
 */
import { ContractError } from '@svc/errors'
import { finishEach } from '@svc/subgraph-server'
import type { Environment } from '@svc/vocabulary'
import { isDuplicateKeyError, VOID_DECISION_PREFIX, voidDecisionId as voidId, type TicketDoc } from '../models'
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
    await d.models.ReservationOutcome.create({ _id: voidId(ticket._id), outcome: 'released', at: nowOf(d), pending: true })
  } catch (err) {
    // voided before (perhaps cut off): finish it
    if (!isDuplicateKeyError(err)) throw err
  }
  const voidedAt = (await d.models.ReservationOutcome.findById(voidId(ticket._id)).lean())?.at ?? nowOf(d)
  await completeVoid(d, ticket, voidedAt)
  d.logger?.info({ ticketId: ticket._id, environment, appDid: ticket.appDid }, 'ticket voided by its organizer')
  return { id: ticket._id, status: 'voided' }
}

/** A void once decided: the ticket `voided` (again, if something wrote it back), then the rest (finishVoid). */
async function completeVoid(d: TicketsDomain, ticket: TicketDoc, voidedAt: Date): Promise<void> {
  if (ticket.status !== 'voided') await d.models.Ticket.updateOne({ _id: ticket._id }, { $set: { status: 'voided', voidedAt, voidPending: true } })
  await finishVoid(d, { ...ticket, voidedAt })
}

/** The rest of a void once its ticket is `voided`: its seat back on sale, the app told, the marks cleared. */
async function finishVoid(d: TicketsDomain, ticket: TicketDoc & { voidedAt: Date }): Promise<void> {
  // a claim's ticket has a reservation of its own; a purchased one the units it was given from its hold's
  if (ticket.unitIds?.length) await deleteUnitsById(d, ticket.unitIds)
  else if (ticket.source === 'claim') await deleteUnitsOf(d, ticket.reservationId)
  if (!ticket.announced) await writeTicketEvent(d, ticket, 'issued', ticket.createdAt)
  await writeTicketEvent(d, ticket, 'voided', ticket.voidedAt)
  // the status again: on FerretDB an announcement's write that read the ticket before the void can have put
  // `issued` back, with no `voidPending` (docs/decisions.md), and the seat is on sale again by now
  await d.models.Ticket.updateOne({ _id: ticket._id }, { $set: { status: 'voided', voidedAt: ticket.voidedAt, voidPending: false, announced: true } })
  // the decision stays pending until the ticket reads voided: a void cut off after the seat returned, with its
  // ticket's status written back, is still found by the sweep through it
  if ((await d.models.Ticket.findById(ticket._id, { status: 1 }).lean())?.status === 'voided') {
    await d.models.ReservationOutcome.updateOne({ _id: voidId(ticket._id) }, { $unset: { pending: 1 } })
  }
}

/**
 * Finishes the voids cut off after their decision: found by the decision's `pending` (which only the void writes),
 * or by their ticket's `voidPending` (voids decided before the decision carried it). Returns how many were finished;
 * one that fails is left for the next run and the others are still finished.
 */
export async function sweepPendingVoids(d: TicketsDomain, limit = 100): Promise<number> {
  const decided = await d.models.ReservationOutcome.find({ pending: true }, { at: 1 }).limit(limit).lean()
  const marked = await d.models.Ticket.find({ voidPending: true }).limit(limit).lean()
  const voids = new Map<string, { ticket: TicketDoc | null; voidedAt: Date }>(marked.map((t) => [t._id, { ticket: t, voidedAt: t.voidedAt ?? nowOf(d) }]))
  for (const decision of decided) {
    const ticketId = decision._id.slice(VOID_DECISION_PREFIX.length)
    if (!voids.has(ticketId)) voids.set(ticketId, { ticket: await d.models.Ticket.findById(ticketId).lean(), voidedAt: decision.at })
  }
  return finishEach('pending voids', voids, async ([ticketId, { ticket, voidedAt }]) => {
    if (ticket) await completeVoid(d, ticket, voidedAt)
    else await d.models.ReservationOutcome.updateOne({ _id: voidId(ticketId) }, { $unset: { pending: 1 } })
  })
}
