/**
 * `ticket.issued` (and a void's `ticket.voided`) reaches the app through the tickets outbox (docs/events.md). The event's id derives from the
 * ticket's, so writing it again is a no-op: a claim writes it right after inserting the ticket, every retry that
 * finds the ticket writes it again, and the sweep writes it for a ticket whose claim died in between
 * (`announced: false` for longer than ANNOUNCE_GRACE_MS).
 */
import { writeOutboxEvent, writeOutboxEvents, type NewOutboxEvent } from '@svc/outbox'
import { finishEach } from '@svc/subgraph-server'
import type { Environment } from '@svc/vocabulary'
import { findEach, voidDecisionId, type TicketDoc } from '../models'
import { nowOf, type TicketsDomain } from './context'

/** A claim announces its ticket within milliseconds; the sweep leaves younger tickets to it. */
export const ANNOUNCE_GRACE_MS = 30_000

/** Writes a ticket's `ticket.issued` or `ticket.voided` (docs/events.md): one per ticket and type, by its key. */
export async function writeTicketEvent(d: TicketsDomain, ticket: TicketDoc, change: 'issued' | 'voided', at: Date): Promise<void> {
  await writeOutboxEvent(d.models.Outbox, ticketEvent(ticket, change, at, d.requestId))
}

function ticketEvent(ticket: TicketDoc, change: 'issued' | 'voided', at: Date, requestId: string | undefined): NewOutboxEvent {
  return {
    type: `ticket.${change}`,
    key: `ticket.${change}:${ticket._id}`,
    environment: ticket.environment as Environment,
    appDid: ticket.appDid,
    occurredAt: at,
    requestId,
    data: {
      ticketId: ticket._id,
      status: change,
      ticketTypeId: ticket.tierId,
      eventUri: ticket.eventUri,
      buyerDid: ticket.buyerDid,
      source: ticket.source,
      [`${change}At`]: at.toISOString(),
      ...(ticket.holdId ? { holdId: ticket.holdId, appOrderId: ticket.appOrderId } : {}),
    },
  }
}

export async function announceIssued(d: TicketsDomain, ticket: TicketDoc): Promise<void> {
  await writeTicketEvent(d, ticket, 'issued', ticket.createdAt)
  if (ticket.announced) return
  await d.models.Ticket.updateOne({ _id: ticket._id }, { $set: { announced: true } })
  await keepVoidsVoided(d, [ticket._id])
}

/**
 * After an announcement's flag writes: a ticket voided meanwhile is written `voided` again. FerretDB writes a
 * filtered update's document back whole, so a flag write that read the ticket before a void and landed after the
 * whole void (its last write included) puts `issued` back, its seat already on sale again. A void decided after this
 * read of the decisions comes after the flag write, so the void's own writes land last.
 */
async function keepVoidsVoided(d: TicketsDomain, ticketIds: string[]): Promise<void> {
  // one equality per id: FerretDB reads a whole collection for `$in` (findEach), on every claim and settle
  const decisions = await findEach(ticketIds.map(voidDecisionId), (id) => d.models.ReservationOutcome.findById(id, { at: 1 }).lean())
  if (decisions.length === 0) return
  const voidedAt = new Map(decisions.map((v) => [v._id, v.at]))
  const written = await findEach(
    ticketIds.filter((id) => voidedAt.has(voidDecisionId(id))),
    (id) => d.models.Ticket.findById(id, { status: 1 }).lean(),
  )
  for (const t of written.filter((t) => t.status !== 'voided')) {
    d.logger?.warn({ ticketId: t._id }, 'an announcement wrote a voided ticket back as issued: voided again')
    await d.models.Ticket.updateOne({ _id: t._id }, { $set: { status: 'voided', voidedAt: voidedAt.get(voidDecisionId(t._id)) } })
  }
}

/** How many tickets' flags a hold's announcement sets at a time. */
const FLAGS_AT_ONCE = 32

/**
 * Announces a paid hold's tickets at once: their events in one command (a hold has up to 2,000 tickets; one by one
 * was two round trips each), then their flags, one update per ticket, FLAGS_AT_ONCE at a time. Not one update of them
 * all: FerretDB reads every matching ticket first and writes each back whole, so a void landing in between, seconds
 * on a large hold, would be written over (`issued` again, its seat on sale); one by one the window is a ticket's
 * milliseconds, which the void's last write covers (void-ticket.ts), and keepVoidsVoided after the flags. Nor one
 * bulk command of updates: FerretDB 1.24 did not answer one of 50 (measured 2026-11-26).
 */
export async function announceHoldTickets(d: TicketsDomain, tickets: TicketDoc[]): Promise<void> {
  const due = tickets.filter((t) => !t.announced)
  if (due.length === 0) return
  await writeOutboxEvents(d.models.Outbox, due.map((t) => ticketEvent(t, 'issued', t.createdAt, d.requestId)))
  for (let i = 0; i < due.length; i += FLAGS_AT_ONCE) {
    await Promise.all(due.slice(i, i + FLAGS_AT_ONCE).map((t) => d.models.Ticket.updateOne({ _id: t._id, announced: false }, { $set: { announced: true } })))
  }
  await keepVoidsVoided(d, due.map((t) => t._id))
}

/** Announces the tickets whose claim died before it did; returns how many. */
export async function sweepUnannounced(d: TicketsDomain, limit = 100): Promise<number> {
  const cutoff = new Date(nowOf(d).getTime() - ANNOUNCE_GRACE_MS)
  // FerretDB pushes the boolean equality down; the age is checked here
  const tickets = await d.models.Ticket.find({ announced: false }).limit(limit * 4).lean()
  const due = tickets.filter((t) => t.createdAt <= cutoff).slice(0, limit)
  return finishEach('unannounced tickets', due, (ticket) => announceIssued(d, ticket))
}
