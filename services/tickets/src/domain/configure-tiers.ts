/**
 * tickets.svc.configureTicketTiers: an organizer, through an app, creates or updates the tiers of an event.
 *
 * The adapter verified the organizer's assertion; here the organizer must be the authority of the event's AT-URI,
 * the app must have the tickets module on, and the event must be the app's (the first app its organizer configured
 * it through). Every tier is checked before anything is written. A capacity never falls below what is sold and held:
 * lowering it takes free seats into the organizer's block (capacity.ts), and is refused when too few are free. One
 * configuration of an event runs at a time (configuration-turns.ts), and a repeat of a call creates no tier twice.
 */
import { ContractError } from '@svc/errors'
import { graphemeLength, hasControlCharacters, isCurrencyCode, parseRecordUri, parseZonedDateTime } from '@svc/vocabulary'
import { isDuplicateKeyError, type TicketedEventDoc, type TierDoc } from '../models'
import { deleteUnitsOfReservation, KEPT_UNTIL, reserve, takenSeats, type UnitToDelete } from './capacity'
import { inConfigurationTurn } from './configuration-turns'
import type { Turn } from '@svc/subgraph-server'
import { nowOf, type ServingTickets, type TicketsDomain } from './context'
import { eventKey, invalid, ticketsEnvironment } from './event-access'
import { createdTierId } from './ids'
import type { ConfigureTicketTiersInput, TicketedEvent, TicketTier, TierInput } from '../generated/graph-types'

export const DEFAULT_HOLD_SECONDS = 600
export const MAX_TIERS_PER_EVENT = 50
const MAX_PRICE = 99_999_999


export const blockReservation = (tierId: string): string => `block_${tierId}`

function parseDate(value: string | null | undefined, field: string): Date | null {
  if (value === undefined || value === null) return null
  // with its zone: one without would be read in this process's time zone (and a retry elsewhere name another tier)
  const date = parseZonedDateTime(value)
  if (!date) return invalid(`${field} must be an ISO 8601 datetime with a time zone, e.g. 2026-06-01T09:00:00Z`)
  // answered back as an atproto datetime, whose year has four digits in UTC (9999-12-31T23:00:00-12:00 is year 10000)
  const year = date.getUTCFullYear()
  if (year < 1 || year > 9999) invalid(`${field} must fall within the years 0001 to 9999 in UTC`)
  return date
}

interface CheckedTier {
  ticketTypeId: string | null
  name: string
  priceAmount: number
  currency: string
  capacity: number
  perBuyerLimit: number
  salesStartAt: Date | null
  salesEndAt: Date | null
}

function checkTier(t: TierInput, i: number): CheckedTier {
  const at = `tiers[${i}]`
  const name = t.name.trim()
  if (name === '' || graphemeLength(name) > 100 || hasControlCharacters(name)) invalid(`${at}.name must be 1 to 100 printable characters`)
  if (!Number.isInteger(t.priceAmount) || t.priceAmount < 0 || t.priceAmount > MAX_PRICE) invalid(`${at}.priceAmount must be an integer from 0 to ${MAX_PRICE}`)
  if (!isCurrencyCode(t.currency)) invalid(`${at}.currency must be a lowercase three-letter ISO 4217 code`)
  if (!Number.isInteger(t.capacity) || t.capacity < 0 || t.capacity > 100_000) invalid(`${at}.capacity must be an integer from 0 to 100000`)
  const perBuyerLimit = t.perBuyerLimit ?? (t.priceAmount === 0 ? 1 : 10)
  if (!Number.isInteger(perBuyerLimit) || perBuyerLimit < 1 || perBuyerLimit > 100) invalid(`${at}.perBuyerLimit must be an integer from 1 to 100`)
  const salesStartAt = parseDate(t.salesStartAt, `${at}.salesStartAt`)
  const salesEndAt = parseDate(t.salesEndAt, `${at}.salesEndAt`)
  if (salesStartAt && salesEndAt && salesEndAt <= salesStartAt) invalid(`${at}.salesEndAt must be after salesStartAt`)
  if (t.ticketTypeId !== undefined && t.ticketTypeId !== null && !/^tier_[0-9a-f]{24}$/.test(t.ticketTypeId)) invalid(`${at}.ticketTypeId is not a tier id`)
  return { ticketTypeId: t.ticketTypeId ?? null, name, priceAmount: t.priceAmount, currency: t.currency, capacity: t.capacity, perBuyerLimit, salesStartAt, salesEndAt }
}

/** The organizer's block: seats kept out of sale so that the capacity is seatRange minus them. */
async function blockedSeats(d: TicketsDomain, tierId: string): Promise<UnitToDelete[]> {
  return d.models.CapacityUnit.find({ reservationId: blockReservation(tierId) }, { _id: 1, unit: 1, kind: 1, tierId: 1 }).lean()
}

/** How many seats the organizer's block holds: counted, not read (a cut of a big tier leaves up to 100,000). */
function blockedCount(d: TicketsDomain, tierId: string): Promise<number> {
  return d.models.CapacityUnit.countDocuments({ reservationId: blockReservation(tierId) })
}

export async function tierCapacity(d: TicketsDomain, tier: Pick<TierDoc, '_id' | 'seatRange'>): Promise<number> {
  return tier.seatRange - (await blockedCount(d, tier._id))
}

/**
 * Lowers the capacities that go down, before anything else is written: free seats taken into each tier's block. When
 * one tier has too few free seats (holds took them since the check), or its cut fails (the database away), the blocks
 * this call took for the tiers before it are given back, while the turn holds, and the request is refused or fails
 * having changed nothing.
 */
async function cutCapacities(d: TicketsDomain, cuts: { tier: TierDoc; capacity: number }[], turn: Turn): Promise<void> {
  const taken: UnitToDelete[][] = []
  const giveBack = async () => {
    // after the turn, the blocks may be the next configuration's to count: left to it
    turn.assertHeld()
    for (const [i, units] of taken.entries()) await deleteUnitsOfReservation(d, blockReservation(cuts[i]!.tier._id), units)
  }
  for (const { tier, capacity } of cuts) {
    // a cut of many seats takes time: each tier's is taken only while the turn holds
    turn.assertHeld()
    const cut = await cutCapacity(d, tier, capacity).catch(async (err: unknown) => {
      await giveBack().catch((giveBackErr: unknown) => d.logger?.warn({ err: giveBackErr }, 'capacity cut failed, and giving back the tiers cut before it failed too; a retry of the configuration converges'))
      throw err
    })
    if (!cut) {
      await giveBack()
      return invalid(`tier ${tier._id}: capacity ${capacity} is below the tickets already sold or held`)
    }
    taken.push(cut)
  }
}

/** Takes the tier's seats above `capacity` into its block: the units taken, or null when too few are free. */
async function cutCapacity(d: TicketsDomain, tier: TierDoc, capacity: number): Promise<UnitToDelete[] | null> {
  const before = new Set((await blockedSeats(d, tier._id)).map((u) => u._id))
  const result = await reserve(d, { id: blockReservation(tier._id), expiresAt: KEPT_UNTIL }, [{ tierId: tier._id, seatRange: tier.seatRange, quantity: tier.seatRange - before.size - capacity }])
  if (!result.ok) return null
  return (await blockedSeats(d, tier._id)).filter((u) => !before.has(u._id))
}

/** Raises a tier's capacity to `capacity`: frees blocked seats, then widens the range. */
async function raiseCapacity(d: TicketsDomain, tier: TierDoc, capacity: number, turn: Turn): Promise<void> {
  const blocked = await blockedSeats(d, tier._id)
  const current = tier.seatRange - blocked.length
  const unblock = blocked.slice(0, capacity - current)
  // the blocks read here may be the next configuration's cut: deleted only while the turn holds
  turn.assertHeld()
  await deleteUnitsOfReservation(d, blockReservation(tier._id), unblock)
  const widen = capacity - current - unblock.length
  turn.assertHeld()
  if (widen > 0) await d.models.Tier.updateOne({ _id: tier._id }, { $set: { seatRange: tier.seatRange + widen } })
}

export async function eventView(d: TicketsDomain, event: TicketedEventDoc): Promise<TicketedEvent> {
  const tiers = await d.models.Tier.find({ eventKey: event._id }).sort({ position: 1 }).lean()
  return {
    eventUri: event.eventUri,
    environment: event.environment,
    holdDurationSeconds: event.holdDurationSeconds,
    tiers: await Promise.all(tiers.map(async (t): Promise<TicketTier> => ({
      ticketTypeId: t._id,
      name: t.name,
      priceAmount: t.priceAmount,
      currency: t.currency,
      capacity: await tierCapacity(d, t),
      perBuyerLimit: t.perBuyerLimit,
      salesStartAt: t.salesStartAt?.toISOString() ?? null,
      salesEndAt: t.salesEndAt?.toISOString() ?? null,
    }))),
  }
}

/**
 * The id each entry without ticketTypeId creates its tier with: derived from the event, the call's whole list of
 * tiers (those it updates with their ids) and the entry's place in it, so a repeat of the same call names the same
 * tiers, and a call that also updates tiers never derives the id of one it names (ids of updating entries: '').
 */
function createdTierIds(eventKey: string, tiers: CheckedTier[]): string[] {
  const call = tiers.map((t) => [t.ticketTypeId, t.name, t.priceAmount, t.currency, t.capacity, t.perBuyerLimit, t.salesStartAt?.toISOString() ?? null, t.salesEndAt?.toISOString() ?? null])
  return tiers.map((t, i) => (t.ticketTypeId !== null ? '' : createdTierId(eventKey, call, i)))
}

export async function configureTicketTiers(d: ServingTickets, appDid: string, input: ConfigureTicketTiersInput): Promise<TicketedEvent> {
  const record = parseRecordUri(input.eventUri)
  if (!record) invalid('eventUri must be the AT-URI of a record (at://<did>/<collection>/<rkey>)')
  if (record!.repo !== input.organizerDid) throw new ContractError('OrganizerAssertionInvalid', 'the organizer is not the authority of the event (at://<organizer DID>/…)')
  const hold = input.holdDurationSeconds
  if (hold !== undefined && hold !== null && (!Number.isInteger(hold) || hold < 60 || hold > 86_400)) invalid('holdDurationSeconds must be an integer from 60 to 86400')
  if (input.tiers.length === 0 || input.tiers.length > MAX_TIERS_PER_EVENT) invalid(`tiers must hold 1 to ${MAX_TIERS_PER_EVENT} tiers`)
  const checked = input.tiers.map(checkTier)
  const named = checked.map((t) => t.ticketTypeId).filter((id): id is string => id !== null)
  if (new Set(named).size !== named.length) invalid('a ticketTypeId appears twice')

  const environment = await ticketsEnvironment(d, appDid, input.environment ?? null)
  const key = eventKey(environment, input.eventUri)
  // one configuration of the event at a time: each decides on what the one before it wrote (configuration-turns.ts)
  // each write first asks whether the turn still holds: a configuration stalled past it (a slow database) stops
  // rather than write back what it read before the next configuration's writes (a range below seats sold)
  return inConfigurationTurn(d, key, async (turn) => {
    const now = nowOf(d)
    let event = await d.models.TicketedEvent.findById(key).lean()
    if (event && event.appDid !== appDid) throw new ContractError('AppUnauthorized', 'this event is ticketed through another app')

    const existing = new Map((event ? await d.models.Tier.find({ eventKey: key }).lean() : []).map((t) => [t._id, t]))
    // the tiers this very call created, if it ran before (a retry after a lost answer or a 503): updated, not created
    // again (which would put the event's seats on sale twice)
    const created = createdTierIds(key, checked)
    const tiers = checked.map((t, i) => (t.ticketTypeId === null && existing.has(created[i]!) ? { ...t, ticketTypeId: created[i]! } : t))
    // every named tier must be the event's, and a lower capacity must fit, before anything is written
    const capacities = new Map<string, number>()
    for (const t of tiers) {
      if (t.ticketTypeId === null) continue
      const tier = existing.get(t.ticketTypeId)
      if (!tier) invalid(`ticketTypeId ${t.ticketTypeId} is not a tier of this event`)
      const blocked = await blockedCount(d, tier!._id)
      const taken = (await takenSeats(d, tier!._id)).length - blocked
      if (t.capacity < taken) invalid(`tier ${tier!._id}: capacity ${t.capacity} is below the ${taken} tickets already sold or held`)
      capacities.set(tier!._id, tier!.seatRange - blocked)
    }
    if (existing.size + tiers.filter((t) => t.ticketTypeId === null).length > MAX_TIERS_PER_EVENT) invalid(`an event has at most ${MAX_TIERS_PER_EVENT} tiers`)
    await cutCapacities(
      d,
      tiers.flatMap((t) => (t.ticketTypeId !== null && t.capacity < capacities.get(t.ticketTypeId)! ? [{ tier: existing.get(t.ticketTypeId)!, capacity: t.capacity }] : [])),
      turn,
    )

    turn.assertHeld()
    if (!event) {
      try {
        await d.models.TicketedEvent.create({ _id: key, appDid, environment, eventUri: input.eventUri, organizerDid: input.organizerDid, holdDurationSeconds: hold ?? DEFAULT_HOLD_SECONDS, createdAt: now, updatedAt: now })
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err
      }
      event = await d.models.TicketedEvent.findById(key).lean()
      if (!event || event.appDid !== appDid) throw new ContractError('AppUnauthorized', 'this event is ticketed through another app')
    } else if (hold !== undefined && hold !== null) {
      await d.models.TicketedEvent.updateOne({ _id: key }, { $set: { holdDurationSeconds: hold, updatedAt: now } })
    }

    let position = existing.size
    for (const [i, t] of tiers.entries()) {
      turn.assertHeld()
      const fields = { name: t.name, priceAmount: t.priceAmount, currency: t.currency, perBuyerLimit: t.perBuyerLimit, salesStartAt: t.salesStartAt, salesEndAt: t.salesEndAt, updatedAt: now }
      if (t.ticketTypeId === null) {
        try {
          await d.models.Tier.create({ _id: created[i]!, eventKey: key, appDid, environment, eventUri: input.eventUri, seatRange: t.capacity, position: position++, createdAt: now, ...fields })
        } catch (err) {
          // a duplicate of this call that ran beside it (its turn had lapsed) made the tier first: it stands
          if (!isDuplicateKeyError(err)) throw err
        }
        continue
      }
      const tier = existing.get(t.ticketTypeId)!
      // a lowered limit keeps the numbers shares were taken under (capacity.ts, openShareSlots)
      const shareRange = Math.max(tier.shareRange ?? tier.perBuyerLimit, t.perBuyerLimit)
      await d.models.Tier.updateOne({ _id: tier._id }, { $set: { ...fields, shareRange } })
      if (t.capacity > capacities.get(tier._id)!) await raiseCapacity(d, tier, t.capacity, turn)
    }
    return eventView(d, (await d.models.TicketedEvent.findById(key).lean())!)
  })
}
