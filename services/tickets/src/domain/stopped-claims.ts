/**
 * Free claims that stopped between their two writes: the attempt's units were kept, then the process died before
 * the ticket was inserted (claim-free-ticket.ts). A retry with the same key adopts them; when none comes, the sweep
 * finishes the claim as that retry would, once the attempt is older than CLAIM_ATTEMPT_SECONDS (a claim takes
 * milliseconds, so nothing in flight is touched):
 * - no ticket under the claim's id: it is inserted with the kept units and announced (`ticket.issued`);
 * - the ticket exists under another attempt's units (a duplicate of the claim won meanwhile): the stopped attempt's
 *   units are deleted, so its seat returns to sale.
 *
 * A claim may also stop between deciding to keep its units and marking them kept: they still carry their attempt's
 * expiry. The sweep ends each due attempt whose units still expire as any reader of its tier would (releaseLapsed):
 * kept when its decision was to keep (then finished as above), released otherwise, so no seat waits for a reader.
 *
 * Only a claim's units carry a ticket id and the minute they were taken (a hold's and the organizer's block's do
 * not). The sweep reads each minute's claims once, by equality on that minute (FerretDB hands PostgreSQL equalities
 * only: a range would read every unit ever sold, docs/performance.md), and records in `sweep_cursors` the last minute
 * whose attempts it has all finished; each run reads the minutes after it, at most STOPPED_CLAIM_MINUTES_PER_RUN, so a
 * sweep that was stopped for days catches up over several runs and never skips a minute (a skipped minute's kept seat
 * would be out of sale for good). With no cursor (the first run on a database) it reads the last
 * STOPPED_CLAIM_WINDOW_MS by age once, which also finds units taken before they carried their minute.
 */
import { finishEach } from '@svc/subgraph-server'
import { findEach, type CapacityUnitDoc } from '../models'
import { deleteUnitsOf, KEPT_UNTIL, minuteOf, releaseLapsed } from './capacity'
import { CLAIM_ATTEMPT_SECONDS, claimedTicket, issue } from './claim-free-ticket'
import { CLOCKS_APART_MS, nowOf, type TicketsDomain } from './context'

export const STOPPED_CLAIM_WINDOW_MS = 24 * 60 * 60 * 1000
/** The most minutes one run reads after its cursor (six hours: 360 equality reads, MINUTES_AT_ONCE at a time). */
export const STOPPED_CLAIM_MINUTES_PER_RUN = 360
const MINUTES_AT_ONCE = 24
const CURSOR = 'stopped-claims'

type ClaimSeat = Pick<CapacityUnitDoc, 'unit' | 'reservationId' | 'ticketId' | 'tierId' | 'buyerDid' | 'createdAt' | 'expiresAt'>
const SEAT_FIELDS = { unit: 1, reservationId: 1, ticketId: 1, tierId: 1, buyerDid: 1, createdAt: 1, expiresAt: 1 }

export async function sweepStoppedClaims(d: TicketsDomain): Promise<{ issued: number; released: number }> {
  const now = nowOf(d).getTime()
  const due = now - CLAIM_ATTEMPT_SECONDS * 1000
  // the minute holding `due` is read again next run (its later attempts are not due yet), and the minutes a clock
  // behind this one's may still stamp: a claim's minute is its process's clock, the cursor this one's (each run reads
  // those few minutes again: nothing to do for a finished claim)
  const settled = minuteOf(due - CLOCKS_APART_MS) - 1
  const cursor = await d.models.SweepCursor.findById(CURSOR).lean()
  const to = cursor ? Math.min(minuteOf(due), cursor.minute + STOPPED_CLAIM_MINUTES_PER_RUN) : minuteOf(due)
  const seats = cursor ? await seatsOfMinutes(d, cursor.minute + 1, to) : await seatsOfWindow(d, now)
  // an attempt's units still expiring once it is due: kept (its decision was to keep) or released here
  const standing = await releaseLapsed(d, seats.filter((s) => s.createdAt.getTime() <= due))
  const finished = await finishStopped(d, standing.filter((s) => s.expiresAt.getTime() <= now || s.expiresAt.getTime() === KEPT_UNTIL.getTime()))
  const reached = Math.min(settled, to)
  if (!cursor || reached > cursor.minute) await d.models.SweepCursor.updateOne({ _id: CURSOR }, { $max: { minute: reached } }, { upsert: true })
  return finished
}

/** The seats of the claims taken in the minutes `from` to `to`, one equality per minute, MINUTES_AT_ONCE at a time. */
async function seatsOfMinutes(d: TicketsDomain, from: number, to: number): Promise<ClaimSeat[]> {
  const seats: ClaimSeat[] = []
  for (let start = from; start <= to; start += MINUTES_AT_ONCE) {
    const minutes = Array.from({ length: Math.min(MINUTES_AT_ONCE, to - start + 1) }, (_, i) => start + i)
    seats.push(...(await findEach(minutes, (claimMinute) => d.models.CapacityUnit.find({ claimMinute, kind: 'seat' }, SEAT_FIELDS).lean<ClaimSeat[]>())))
  }
  return seats
}

/** The seats of the claims of the last STOPPED_CLAIM_WINDOW_MS, by age: a scan of every seat, done once. */
function seatsOfWindow(d: TicketsDomain, now: number): Promise<ClaimSeat[]> {
  return d.models.CapacityUnit.find(
    { kind: 'seat', ticketId: { $ne: null }, createdAt: { $gt: new Date(now - STOPPED_CLAIM_WINDOW_MS) } },
    SEAT_FIELDS,
  ).lean<ClaimSeat[]>()
}

async function finishStopped(d: TicketsDomain, seats: ClaimSeat[]): Promise<{ issued: number; released: number }> {
  if (seats.length === 0) return { issued: 0, released: 0 }
  const ticketIds = [...new Set(seats.map((s) => s.ticketId!))]
  const tickets = new Map((await findEach(ticketIds, (id) => d.models.Ticket.findById(id, { reservationId: 1 }).lean())).map((t) => [t._id, t.reservationId]))
  let issued = 0
  let released = 0
  // one seat that fails holds up no other; the run then throws, so the cursor stays and its minute is read again
  await finishEach('stopped claims', seats, async (seat) => {
    // whose the ticket is decides, as it stands now: a ticket this run issued (or found inserted by a retry that
    // adopted another attempt of the claim) keeps its own seat, and only the others' units go
    if (tickets.has(seat.ticketId!)) {
      if (tickets.get(seat.ticketId!) !== seat.reservationId) {
        await deleteUnitsOf(d, seat.reservationId)
        released++
      }
      return
    }
    const tier = await d.models.Tier.findById(seat.tierId).lean()
    if (!tier || !seat.buyerDid) return
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
  })
  return { issued, released }
}
