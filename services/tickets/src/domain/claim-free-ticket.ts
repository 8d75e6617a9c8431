/**
 * tickets.svc.claimFreeTicket: a buyer (whose assertion the adapter verified) claims a ticket of a free tier.
 *
 * The claim's key is the app's `idempotencyKey`, scoped to app, environment, event, tier and buyer (without one, that
 * scope alone, as the contract words the key: one claim per buyer and tier): the ticket's id
 * derives from that scope, so a retry and every concurrent duplicate name the same ticket and get it. Capacity is
 * taken as units (capacity.ts): one seat and one of the buyer's shares per attempt. Then, in this order, the attempt
 * is kept (its units stop expiring) and the ticket inserted under its id; the insert is what makes duplicates
 * converge. A claim that dies between the two leaves kept units with the ticket's id, which a retry adopts; one that
 * dies before keeping leaves units that lapse after CLAIM_ATTEMPT_SECONDS. After the ticket, its `ticket.issued` event
 * (announce.ts).
 *
 * DuplicateClaim: the buyer already holds all the tier's shares (its per-buyer limit, 1 for a free tier unless the
 * organizer set more) for other claim keys. TicketHoldUnavailable: no seat is left, or the tier is not on sale.
 */
import { randomBytes } from 'node:crypto'
import { ContractError } from '@svc/errors'
import { isDid } from '@svc/vocabulary'
import { isDuplicateKeyError, type TicketDoc } from '../models'
import { announceIssued } from './announce'
import { deleteUnitsOf, keepReservation, releaseReservation, reserve } from './capacity'
import { onSale } from './availability'
import { nowOf, type ServingTickets, type TicketsDomain } from './context'
import { appEvent, eventTiers, ticketsEnvironment } from './event-access'
import { DUPLICATE_POLL_MS, DUPLICATE_WAIT_MS, sleep } from './duplicates'
import { claimTicketId, newPageToken, newScanToken } from './ids'
import type { ClaimFreeTicketInput, Ticket } from '../generated/graph-types'

/** An attempt's units lapse after this long unless it was kept (a claim takes milliseconds). */
export const CLAIM_ATTEMPT_SECONDS = 60

/** A ticket as its app sees it, with the buyer's page on the checkout host (none for tickets issued before pages). */
export const ticketView = (d: Pick<ServingTickets, 'checkoutUrl'>, t: Pick<TicketDoc, '_id' | 'status' | 'tierId' | 'eventUri' | 'buyerDid' | 'pageToken'>): Ticket => ({
  id: t._id,
  status: t.status,
  ticketTypeId: t.tierId,
  eventUri: t.eventUri,
  buyerDid: t.buyerDid,
  url: t.pageToken ? `${d.checkoutUrl}/checkout/${t.pageToken}` : null,
})

/** Inserts the ticket of a kept attempt, then announces it (ticket.issued); a duplicate that inserted first wins. */
export async function issue(d: TicketsDomain, ticket: TicketDoc): Promise<{ ticket: TicketDoc; inserted: boolean }> {
  let inserted = true
  try {
    await d.models.Ticket.create(ticket)
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err
    inserted = false
  }
  const stored = inserted ? ticket : (await d.models.Ticket.findById(ticket._id).lean())!
  if (!stored.announced) await announceIssued(d, stored)
  return { ticket: stored, inserted }
}

/** A claim's ticket, as its attempt `reservationId` (kept) issues it. */
export const claimedTicket = (c: Pick<TicketDoc, 'appDid' | 'environment' | 'eventUri' | 'tierId' | 'buyerDid' | 'reservationId'> & { ticketId: string; now: Date }): TicketDoc => ({
  _id: c.ticketId,
  appDid: c.appDid,
  environment: c.environment,
  eventUri: c.eventUri,
  tierId: c.tierId,
  buyerDid: c.buyerDid,
  reservationId: c.reservationId,
  status: 'issued',
  source: 'claim',
  secret: newScanToken(),
  pageToken: newPageToken(c.ticketId),
  // voiding a claim's ticket releases its own reservation's units
  unitIds: [],
  announced: false,
  createdAt: c.now,
})

/** The ticket a claim's key issued, or null; a retry after a claim that stopped before its event writes it now. */
async function issuedTicket(d: ServingTickets, ticketId: string): Promise<Ticket | null> {
  const existing = await d.models.Ticket.findById(ticketId).lean()
  if (!existing) return null
  if (!existing.announced) await announceIssued(d, existing)
  return ticketView(d, existing)
}

/**
 * The ticket of a kept attempt of this claim (its units carry the ticket's id, its outcome is `kept`): an attempt that
 * kept its seat and stopped before inserting its ticket. Its units are kept however long ago that was (a keep cut off
 * before it marked them leaves the attempt's expiry on them), so they are looked up by the ticket alone.
 */
async function adoptKept(d: ServingTickets, ticketId: string, record: (kept: { reservationId: string; tierId: string }) => TicketDoc): Promise<Ticket | null> {
  const seats = await d.models.CapacityUnit.find({ ticketId, kind: 'seat' }, { reservationId: 1, tierId: 1 }).lean()
  for (const seat of seats) {
    if ((await d.models.ReservationOutcome.findById(seat.reservationId).lean())?.outcome !== 'kept') continue
    const { ticket, inserted } = await issue(d, record(seat))
    // another attempt's ticket was inserted first: this attempt's units go (as the sweep does)
    if (!inserted && ticket.reservationId !== seat.reservationId) await deleteUnitsOf(d, seat.reservationId)
    return ticketView(d, ticket)
  }
  return null
}

export async function claimFreeTicket(d: ServingTickets, appDid: string, input: ClaimFreeTicketInput): Promise<Ticket> {
  if (!isDid(input.buyerDid)) throw new ContractError('InvalidRequest', 'buyerDid must be a DID')
  const idempotencyKey = input.idempotencyKey ?? null
  if (idempotencyKey !== null && (idempotencyKey === '' || idempotencyKey.length > 256)) throw new ContractError('InvalidRequest', 'idempotencyKey must be 1 to 256 characters')
  const environment = await ticketsEnvironment(d, appDid, input.environment ?? null)
  const ticketId = claimTicketId({ appDid, environment, eventUri: input.eventUri, tierId: input.ticketTypeId, buyerDid: input.buyerDid, idempotencyKey })
  // a retry gets the ticket its key issued, whatever the organizer changed since (the tier's price, its sale window)
  const issued = await issuedTicket(d, ticketId)
  if (issued) return issued
  // … and the seat an earlier attempt of its key kept before it stopped, the same
  const adopted = await adoptKept(d, ticketId, (kept) =>
    claimedTicket({ ticketId, appDid, environment, eventUri: input.eventUri, tierId: kept.tierId, buyerDid: input.buyerDid, reservationId: kept.reservationId, now: nowOf(d) }))
  if (adopted) return adopted

  const event = await appEvent(d, appDid, environment, input.eventUri)
  const [tier] = event ? await eventTiers(d, event, [input.ticketTypeId]) : []
  if (!event || !tier) throw new ContractError('InvalidRequest', `ticketTypeId ${input.ticketTypeId} is not a tier of this event`)
  if (tier.priceAmount !== 0) throw new ContractError('InvalidRequest', 'this tier is not free: hold its tickets with createTicketHold and pay at checkout')

  const record = (reservationId: string) =>
    claimedTicket({ ticketId, appDid, environment, eventUri: input.eventUri, tierId: tier._id, buyerDid: input.buyerDid, reservationId, now: nowOf(d) })
  const deadline = Date.now() + DUPLICATE_WAIT_MS
  let shareRetried = false
  for (let pass = 0; ; pass++) {
    // (the first pass was just looked up, above the tier checks)
    const existing = pass === 0 ? null : await issuedTicket(d, ticketId)
    if (existing) return existing

    // a duplicate in flight kept its units and died before the ticket: adopt them
    const orphan = await adoptKept(d, ticketId, (kept) => record(kept.reservationId))
    if (orphan) return orphan

    if (!onSale(tier, nowOf(d))) throw new ContractError('TicketHoldUnavailable', 'this tier is not on sale now')
    const attempt = { id: `claim_${randomBytes(12).toString('hex')}`, expiresAt: new Date(nowOf(d).getTime() + CLAIM_ATTEMPT_SECONDS * 1000), buyerDid: input.buyerDid, ticketId }
    const result = await reserve(d, attempt, [{ tierId: tier._id, seatRange: tier.seatRange, quantity: 1, buyer: { did: input.buyerDid, perBuyerLimit: tier.perBuyerLimit, shareRange: tier.shareRange ?? undefined } }])
    if (!result.ok) {
      // what is lacking may be held by this very claim in flight (a duplicate, its units carry the ticket's id: the
      // last seat, or the buyer's share): wait for its ticket
      const inFlight = await d.models.CapacityUnit.findOne({ ticketId, expiresAt: { $gt: nowOf(d) } }, { _id: 1 }).lean()
      if (!inFlight) {
        if (result.lacking === 'seat') throw new ContractError('TicketHoldUnavailable', 'no ticket of this tier is left')
        // a share held by a duplicate that failed meanwhile is free again: one more try before answering
        if (!shareRetried) {
          shareRetried = true
          continue
        }
        throw new ContractError('DuplicateClaim', `the buyer already holds ${tier.perBuyerLimit} ticket(s) of this tier under other claim keys`)
      }
      if (Date.now() > deadline) throw new ContractError('ServiceUnavailable', 'the same claim is still in progress; retry')
      await sleep(DUPLICATE_POLL_MS)
      continue
    }
    // an attempt past its expiry is not kept: the stopped-claims sweep reads each minute's claims once, and may have
    // read this one's before its slow units landed; kept and then cut off, its seat would be out of sale for good
    if (nowOf(d).getTime() >= attempt.expiresAt.getTime()) {
      await releaseReservation(d, attempt.id)
      if (Date.now() > deadline) throw new ContractError('ServiceUnavailable', 'the claim took too long; retry')
      continue
    }
    if (!(await keepReservation(d, attempt.id))) {
      // released as lapsed meanwhile (a process whose clock is more than the attempt's 60 s ahead): try again, for
      // as long as a duplicate is waited for
      if (Date.now() > deadline) throw new ContractError('ServiceUnavailable', 'the claim took too long; retry')
      continue
    }
    const { ticket, inserted } = await issue(d, record(attempt.id))
    if (!inserted && ticket.reservationId !== attempt.id) await deleteUnitsOf(d, attempt.id)
    return ticketView(d, ticket)
  }
}
