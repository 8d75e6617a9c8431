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
import { nowOf, type TicketsDomain } from './context'
import { eventKey } from './event-access'

/** Tickets that hold their seat: issued or checked in (a voided one gave it back). */
const HOLDS_A_SEAT = ['issued', 'checked-in'] as const

/** "Your events" lists the newest this many (by creation, then key: a total order, so which ones is never arbitrary). */
export const ORGANIZER_EVENTS_SHOWN = 200

export async function organizerEvents(d: TicketsDomain, organizerDid: string, environment: Environment) {
  const events = await d.models.TicketedEvent.find({ organizerDid, environment }).sort({ createdAt: -1, _id: -1 }).limit(ORGANIZER_EVENTS_SHOWN).lean()
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
  // the counts and the pages of tickets are read when asked for (OrganizerEvent.tiers, .ticketPage): an attendee
  // list reads pages only
  return { eventUri: event.eventUri, appDid: event.appDid, environment: event.environment, tierDocs: tiers }
}

/** Each tier of the event with what is sold, held and left, counted over all of its tickets and seats. */
export function organizerTiers(d: TicketsDomain, event: OrganizerEventView) {
  return Promise.all(
    event.tierDocs.map(async (t) => {
      const capacity = await tierCapacity(d, t)
      const taken = (await takenSeats(d, t._id)).filter((u) => u.reservationId !== blockReservation(t._id)).length
      const sold = await d.models.Ticket.countDocuments({ tierId: t._id, status: { $in: [...HOLDS_A_SEAT] } })
      return { ticketTypeId: t._id, name: t.name, priceAmount: t.priceAmount, currency: t.currency, capacity, sold, held: Math.max(0, taken - sold), available: Math.max(0, capacity - taken) }
    }),
  )
}

export type OrganizerEventView = Awaited<ReturnType<typeof organizerEvent>>

/** How long after its time a ticket may still be inserted (the settle of a hold, its caller's 10 s, clocks apart). */
export const ISSUE_SETTLE_MS = 60_000

export const TICKET_PAGE_DEFAULT = 200
export const TICKET_PAGE_MAX = 5000

/** A page's cursor: the last ticket's time and id (the order is by both), base64url so it reads as one token. */
const cursorOf = (t: { createdAt: Date; _id: string }): string => Buffer.from(JSON.stringify([t.createdAt.getTime(), t._id])).toString('base64url')

function parseCursor(after: string): { at: Date; id: string } {
  let value: unknown
  try {
    value = JSON.parse(Buffer.from(after, 'base64url').toString('utf8'))
  } catch {
    value = null
  }
  // a time a Date holds (±8.64e15 ms: a larger safe integer is an Invalid Date, which the query cannot take)
  if (!Array.isArray(value) || value.length !== 2 || !Number.isSafeInteger(value[0]) || Number.isNaN(new Date(value[0] as number).getTime()) || typeof value[1] !== 'string' || !TICKET_ID.test(value[1])) {
    throw new ContractError('InvalidRequest', 'after must be the nextCursor of an earlier page')
  }
  return { at: new Date(value[0] as number), id: value[1] as string }
}

const TICKET_ID = /^ticket_[0-9a-f]{24}$/

/**
 * A page of the event's tickets, oldest first (by time, then id, so tickets of one instant keep their order), read
 * among the event's tiers only: a cursor names a place in the order, never a ticket to fetch, so it cannot reach
 * another event's.
 */
export async function organizerTicketPage(d: TicketsDomain, event: OrganizerEventView, args: { after?: string | null; limit?: number | null }) {
  const limit = args.limit ?? TICKET_PAGE_DEFAULT
  if (!Number.isInteger(limit) || limit < 1 || limit > TICKET_PAGE_MAX) throw new ContractError('InvalidRequest', `limit must be an integer from 1 to ${TICKET_PAGE_MAX}`)
  const names = new Map(event.tierDocs.map((t) => [t._id, t.name]))
  const after: Record<string, unknown> = {}
  if (args.after != null) {
    const { at, id } = parseCursor(args.after)
    after.$or = [{ createdAt: { $gt: at } }, { createdAt: at, _id: { $gt: id } }]
  }
  // each tier by its equality, then merged: FerretDB hands PostgreSQL only equalities, so `tierId: { $in }` read every
  // ticket of every event on each page (seconds per page at 100,000s of tickets)
  const found = (await findEach(names.keys(), (tierId) => d.models.Ticket.find({ tierId, ...after }).sort({ createdAt: 1, _id: 1 }).limit(limit + 1).lean()))
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0))
    .slice(0, limit + 1)
  let page = found.slice(0, limit)
  // a ticket's time is taken before its insert is seen (a hold's settle reads first; its caller waits up to 10 s): a
  // full page's cursor stops before its tickets of the last ISSUE_SETTLE_MS, which the next page then reads, so a
  // ticket inserted late with an earlier time is not passed by (an attendee list exported during sales has it)
  const more = found.length > limit
  if (more) {
    const settled = nowOf(d).getTime() - ISSUE_SETTLE_MS
    const older = page.filter((t) => t.createdAt.getTime() <= settled)
    if (older.length > 0) page = older
  }
  return {
    tickets: page.map((x) => ({
      id: x._id,
      ticketTypeId: x.tierId,
      tierName: names.get(x.tierId) ?? '',
      buyerDid: x.buyerDid,
      status: x.status,
      source: x.source,
      appOrderId: x.appOrderId ?? null,
      issuedAt: x.createdAt.toISOString(),
    })),
    nextCursor: more ? cursorOf(page[page.length - 1]!) : null,
  }
}
