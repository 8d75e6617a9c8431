/**
 * Capacity as units under a unique index (docs/tickets.md, "Capacity"). A tier's seats are the units
 * `<tierId>#0` … `<tierId>#<seatRange - 1>`; a buyer's shares of it are `<tierId>@<buyerDid>#0` … `#<perBuyerLimit - 1>`.
 * A reservation (a hold, a free claim's attempt, the organizer's block) takes units by inserting one document per
 * unit: the unique index on `unit` refuses a second taker, on FerretDB as on MongoDB, so no seat is ever taken twice.
 * Nothing decides by reading and then writing: reads only choose which units to try.
 *
 * A reservation ends once, by the insert of its outcome (`reservation_outcomes`, `_id` = the reservation): `kept`
 * (its units stay, for a ticket) or `released` (its units are deleted). Whoever inserts first decides; a unit's `_id`
 * carries its reservation, so deleting a released reservation's units by `_id` can never remove another's.
 */
import { randomInt } from 'node:crypto'
import { isDuplicateKeyError, type CapacityUnitDoc } from '../models'
import { nowOf, type TicketsDomain } from './context'
import { sharedRead } from './shared-reads'

export const seatUnit = (tierId: string, n: number): string => `${tierId}#${n}`
export const buyerUnit = (tierId: string, buyerDid: string, k: number): string => `${tierId}@${buyerDid}#${k}`
const unitId = (reservationId: string, unit: string): string => `${reservationId}/${unit}`

/** Kept units never expire. */
export const KEPT_UNTIL = new Date('9999-12-31T00:00:00Z')

/** What one reservation asks of one tier. */
export interface UnitRequest {
  tierId: string
  seatRange: number
  quantity: number
  /** the buyer's shares are taken too when given */
  buyer?: { did: string; perBuyerLimit: number }
}

export interface Reservation {
  id: string
  expiresAt: Date
  buyerDid?: string | null
  ticketId?: string | null
  orderKey?: string | null
}

export type ReserveResult = { ok: true } | { ok: false; lacking: 'seat' | 'buyer'; tierId: string }

type TakenUnit = Pick<CapacityUnitDoc, 'unit' | 'reservationId' | 'expiresAt'>

/** Inserts one unit; false when another reservation holds it. */
async function take(d: TicketsDomain, r: Reservation, req: UnitRequest, unit: string, kind: 'seat' | 'buyer'): Promise<boolean> {
  try {
    await d.models.CapacityUnit.create({
      _id: unitId(r.id, unit),
      unit,
      kind,
      tierId: req.tierId,
      reservationId: r.id,
      buyerDid: r.buyerDid ?? null,
      ticketId: r.ticketId ?? null,
      orderKey: r.orderKey ?? null,
      expiresAt: r.expiresAt,
      createdAt: nowOf(d),
    })
    return true
  } catch (err) {
    if (isDuplicateKeyError(err)) return false
    throw err
  }
}

/**
 * Releases every reservation among `units` whose time has passed without being kept (lazily, on the read that finds
 * it), and returns the units still taken.
 */
export async function releaseLapsed(d: TicketsDomain, units: TakenUnit[]): Promise<TakenUnit[]> {
  const now = nowOf(d).getTime()
  const lapsed = [...new Set(units.filter((u) => u.expiresAt.getTime() <= now).map((u) => u.reservationId))]
  if (lapsed.length === 0) return units
  // one read of their outcomes: a crowd of readers meeting the same lapsed holds decides each once, not each reader
  const decided = new Map((await d.models.ReservationOutcome.find({ _id: { $in: lapsed } }).lean()).map((o) => [o._id, o.outcome]))
  const released = new Set<string>()
  await Promise.all(
    lapsed.map(async (id) => {
      const outcome = decided.get(id)
      if (outcome === 'kept') return
      if (outcome === 'released') {
        // released by another reader whose deletion is under way, or stopped: finishing it is safe (by `_id`)
        await deleteUnitsOf(d, id)
        released.add(id)
      } else if (await releaseShared(d, id)) released.add(id)
    }),
  )
  return units.filter((u) => !released.has(u.reservationId))
}

/** Releases in flight in this process: concurrent readers of the same lapsed reservation share one release. */
const releasing = new Map<string, Promise<boolean>>()

function releaseShared(d: TicketsDomain, reservationId: string): Promise<boolean> {
  let release = releasing.get(reservationId)
  if (!release) {
    release = releaseReservation(d, reservationId).finally(() => releasing.delete(reservationId))
    releasing.set(reservationId, release)
  }
  return release
}

/**
 * The seats of a tier taken now (lapsed reservations released first). `shared`: the read is shared with concurrent
 * requests (shared-reads.ts), for the first look of a hold, a claim or availability; a decision that needs the
 * state after its own writes (the next round of seats, the organizer's capacity checks) reads on its own.
 */
export async function takenSeats(d: TicketsDomain, tierId: string, opts: { shared?: boolean } = {}): Promise<TakenUnit[]> {
  const read = () => d.models.CapacityUnit.find({ tierId, kind: 'seat' }, { unit: 1, reservationId: 1, expiresAt: 1 }).lean()
  return releaseLapsed(d, await (opts.shared ? sharedRead(d.models, `seats ${tierId}`, read) : read()))
}

/** The free seats of a tier: how many, and a few of them drawn at random. */
interface FreeSeats {
  count: number
  /** up to `k` distinct free seats, at random */
  draw(k: number): string[]
}

/** The seat number of a seat unit (`<tierId>#<n>`). */
const seatNumber = (unit: string): number => Number(unit.slice(unit.lastIndexOf('#') + 1))

/**
 * Never lists the whole range: a tier may have 100,000 seats, and listing and shuffling them cost about half a second
 * of CPU per hold or claim. While at least half the seats are free, random seat numbers are drawn until enough free
 * ones come up; past that, the free numbers are listed and a partial Fisher-Yates shuffle draws from them.
 */
async function freeSeats(d: TicketsDomain, req: Pick<UnitRequest, 'tierId' | 'seatRange'>, opts: { shared?: boolean } = {}): Promise<FreeSeats> {
  const taken = new Set<number>()
  for (const u of await takenSeats(d, req.tierId, opts)) {
    const n = seatNumber(u.unit)
    if (n < req.seatRange) taken.add(n)
  }
  const count = req.seatRange - taken.size
  const draw = (k: number): string[] => {
    const want = Math.min(k, count)
    const picked = new Set<number>()
    if (count * 2 >= req.seatRange) {
      while (picked.size < want) {
        const n = randomInt(req.seatRange)
        if (!taken.has(n)) picked.add(n)
      }
    } else {
      const free: number[] = []
      for (let n = 0; n < req.seatRange; n++) if (!taken.has(n)) free.push(n)
      for (let i = 0; i < want; i++) {
        const j = i + randomInt(free.length - i)
        ;[free[i], free[j]] = [free[j]!, free[i]!]
        picked.add(free[i]!)
      }
    }
    return [...picked].map((n) => seatUnit(req.tierId, n))
  }
  return { count, draw }
}

const SEAT_ROUNDS = 4
const SEAT_TRIES_PER_ROUND = 6

/** Takes `count` seats of the tier; returns the units taken (fewer when the tier has no more). */
async function takeSeats(d: TicketsDomain, r: Reservation, req: UnitRequest, count: number, firstRead: FreeSeats): Promise<string[]> {
  const got: string[] = []
  // A seat chosen from a read can be taken meanwhile by a concurrent reservation: each round tries a few of the free
  // seats at random, then reads again. Bounded, so a crowd on the last seats costs reads, not a storm of inserts.
  for (let round = 0; round < SEAT_ROUNDS && got.length < count; round++) {
    const free = round === 0 ? firstRead : await freeSeats(d, req)
    if (free.count === 0) break
    const tries = free.draw((count - got.length) * 2 + SEAT_TRIES_PER_ROUND)
    for (const unit of tries) {
      if (got.length === count) break
      if (await take(d, r, req, unit, 'seat')) got.push(unit)
    }
  }
  return got
}

/** Takes the buyer's `count` shares of the tier; returns the units taken. */
async function takeShares(d: TicketsDomain, r: Reservation, req: UnitRequest & { buyer: NonNullable<UnitRequest['buyer']> }, count: number): Promise<string[]> {
  const got: string[] = []
  for (let round = 0; round < 2 && got.length < count; round++) {
    if (round > 0) {
      // a share still held by a lapsed hold is freed, then tried again
      const held = await d.models.CapacityUnit.find({ tierId: req.tierId, kind: 'buyer', buyerDid: req.buyer.did }, { unit: 1, reservationId: 1, expiresAt: 1 }).lean()
      if ((await releaseLapsed(d, held)).length === held.length) break
    }
    for (let k = 0; k < req.buyer.perBuyerLimit && got.length < count; k++) {
      const unit = buyerUnit(req.tierId, req.buyer.did, k)
      if (got.includes(unit)) continue
      if (await take(d, r, req, unit, 'buyer')) {
        got.push(unit)
        continue
      }
      // a twin of this order holds the share: stop here rather than split the buyer's shares with it
      if (r.orderKey && (await d.models.CapacityUnit.exists({ unit, orderKey: r.orderKey }))) return got
    }
  }
  return got
}

/**
 * Takes every unit the requests ask for under one reservation, or none: on a shortage the units already taken are
 * deleted again (by `_id`: only this reservation's) and the result names what was lacking.
 */
export async function reserve(d: TicketsDomain, r: Reservation, requests: UnitRequest[]): Promise<ReserveResult> {
  const taken: string[] = []
  const undo = async () => {
    if (taken.length) await d.models.CapacityUnit.deleteMany({ _id: { $in: taken.map((u) => unitId(r.id, u)) } })
  }
  try {
    // a tier with too few free seats is refused before anything is taken (the common answer once sold out)
    const firstReads = new Map<UnitRequest, FreeSeats>()
    for (const req of requests) {
      const free = await freeSeats(d, req, { shared: true })
      if (free.count < req.quantity) return { ok: false, lacking: 'seat', tierId: req.tierId }
      firstReads.set(req, free)
    }
    for (const req of requests) {
      if (req.buyer) {
        const shares = await takeShares(d, r, { ...req, buyer: req.buyer }, req.quantity)
        taken.push(...shares)
        if (shares.length < req.quantity) {
          await undo()
          return { ok: false, lacking: 'buyer', tierId: req.tierId }
        }
      }
      const seats = await takeSeats(d, r, req, req.quantity, firstReads.get(req)!)
      taken.push(...seats)
      if (seats.length < req.quantity) {
        await undo()
        return { ok: false, lacking: 'seat', tierId: req.tierId }
      }
    }
    return { ok: true }
  } catch (err) {
    await undo().catch(() => undefined)
    throw err
  }
}

/** Inserts the reservation's outcome; returns the outcome that stands (this one, or the one inserted first). */
async function decide(d: TicketsDomain, reservationId: string, outcome: 'kept' | 'released'): Promise<'kept' | 'released'> {
  try {
    await d.models.ReservationOutcome.create({ _id: reservationId, outcome, at: nowOf(d) })
    return outcome
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err
    const existing = await d.models.ReservationOutcome.findById(reservationId).lean()
    return existing?.outcome === 'kept' ? 'kept' : 'released'
  }
}

/** Keeps a reservation's units for good; false when it was released first (its units are gone). */
export async function keepReservation(d: TicketsDomain, reservationId: string): Promise<boolean> {
  if ((await decide(d, reservationId, 'kept')) !== 'kept') return false
  await d.models.CapacityUnit.updateMany({ reservationId }, { $set: { expiresAt: KEPT_UNTIL } })
  return true
}

/** Releases a reservation and deletes its units; false when it was kept (its units then stop expiring). */
export async function releaseReservation(d: TicketsDomain, reservationId: string): Promise<boolean> {
  if ((await decide(d, reservationId, 'released')) !== 'released') {
    await d.models.CapacityUnit.updateMany({ reservationId }, { $set: { expiresAt: KEPT_UNTIL } })
    return false
  }
  await deleteUnitsOf(d, reservationId)
  return true
}

/**
 * Deletes a reservation's units, by `_id` (which names the reservation, so no other reservation's unit can go): for
 * a released reservation, or a kept one that turned out not to be needed (a duplicate claim that lost).
 */
export async function deleteUnitsOf(d: TicketsDomain, reservationId: string): Promise<void> {
  const units = await d.models.CapacityUnit.find({ reservationId }, { _id: 1 }).lean()
  if (units.length) await d.models.CapacityUnit.deleteMany({ _id: { $in: units.map((u) => u._id) } })
}
