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
import { deleteByIds, findEach, isDuplicateKeyError, type CapacityUnitDoc } from '../models'
import { nowOf, type TicketsDomain } from './context'
import { bitIsSet, seatNumber, type SeatMapState, type TakenUnit } from './seat-map'
import { finishEach, sharedRun } from '@svc/subgraph-server'

export const seatUnit = (tierId: string, n: number): string => `${tierId}#${n}`
export const buyerUnit = (tierId: string, buyerDid: string, k: number): string => `${tierId}@${buyerDid}#${k}`
export const unitId = (reservationId: string, unit: string): string => `${reservationId}/${unit}`

/** Kept units never expire. */
export const KEPT_UNTIL = new Date('9999-12-31T00:00:00Z')

/** The minute of `at` (ms / 60000): a free claim's units carry the minute they were taken (stopped-claims.ts). */
export const minuteOf = (at: Date | number) => Math.floor((typeof at === 'number' ? at : at.getTime()) / 60_000)

/** What one reservation asks of one tier. */
export interface UnitRequest {
  tierId: string
  seatRange: number
  quantity: number
  /** the buyer's shares are taken too when given */
  buyer?: { did: string; perBuyerLimit: number; /** the tier's shareRange (absent: perBuyerLimit) */ shareRange?: number }
}

export interface Reservation {
  id: string
  expiresAt: Date
  buyerDid?: string | null
  ticketId?: string | null
  orderKey?: string | null
}

export type ReserveResult = { ok: true } | { ok: false; lacking: 'seat' | 'buyer'; tierId: string }

export type UnitToDelete = Pick<CapacityUnitDoc, '_id' | 'unit' | 'kind' | 'tierId'>

/** The unit document a reservation inserts to take `unit`. */
function unitDoc(d: TicketsDomain, r: Reservation, req: UnitRequest, unit: string, kind: 'seat' | 'buyer'): CapacityUnitDoc {
  const at = nowOf(d)
  return {
    _id: unitId(r.id, unit),
    unit,
    kind,
    tierId: req.tierId,
    reservationId: r.id,
    buyerDid: r.buyerDid ?? null,
    ticketId: r.ticketId ?? null,
    claimMinute: r.ticketId ? minuteOf(at) : null,
    orderKey: r.orderKey ?? null,
    expiresAt: r.expiresAt,
    createdAt: at,
  }
}

/**
 * The units one call of `reserve` inserted (`written`), and those whose insert it sent without learning what became
 * of it (`unsure`: the reply lost with the connection), by `_id`. A refusal as another's changes neither: a unit this
 * call wrote and later tried again (a seat map that missed the write) stays written.
 */
interface Taking {
  written: Map<string, UnitToDelete>
  unsure: Map<string, UnitToDelete>
}

function unitToDelete(r: Reservation, req: UnitRequest, unit: string, kind: 'seat' | 'buyer'): UnitToDelete {
  return { _id: unitId(r.id, unit), unit, kind, tierId: req.tierId }
}

/** Inserts one unit; false when another reservation holds it. */
async function take(d: TicketsDomain, taking: Taking, r: Reservation, req: UnitRequest, unit: string, kind: 'seat' | 'buyer'): Promise<boolean> {
  const taken = unitToDelete(r, req, unit, kind)
  try {
    await d.models.CapacityUnit.create(unitDoc(d, r, req, unit, kind))
  } catch (err) {
    if (isDuplicateKeyError(err)) return false
    if (!taking.written.has(taken._id)) taking.unsure.set(taken._id, taken)
    throw err
  }
  taking.written.set(taken._id, taken)
  if (kind === 'seat') await onMap(d, 'took', (m) => m.took(req.tierId, [seatNumber(unit)]))
  return true
}

/** Seats inserted per command when a reservation takes many (a hold of 100, the organizer's block of a cut). */
export const SEATS_PER_INSERT = 500

/**
 * Inserts these seat units in one unordered command: each insert is decided alone by the unique unit, as `take`'s.
 * Returns the units inserted (those another reservation holds are left out).
 */
async function takeSeatBatch(d: TicketsDomain, taking: Taking, r: Reservation, req: UnitRequest, units: string[]): Promise<string[]> {
  if (units.length === 1) return (await take(d, taking, r, req, units[0]!, 'seat')) ? units : []
  let refused = new Set<number>()
  try {
    await d.models.CapacityUnit.collection.insertMany(units.map((unit) => unitDoc(d, r, req, unit, 'seat')) as never[], { ordered: false })
  } catch (err) {
    const writeErrors = (err as { writeErrors?: unknown }).writeErrors
    const errors = (Array.isArray(writeErrors) ? writeErrors : writeErrors ? [writeErrors] : []) as { index: number; code?: number }[]
    refused = new Set(errors.filter((e) => e.code === 11000).map((e) => e.index))
    if (errors.length === 0 || errors.some((e) => e.code !== 11000)) {
      for (const [i, unit] of units.entries()) {
        const sent = unitToDelete(r, req, unit, 'seat')
        if (!refused.has(i) && !taking.written.has(sent._id)) taking.unsure.set(sent._id, sent)
      }
      throw err
    }
  }
  const got = units.filter((_, i) => !refused.has(i))
  for (const unit of got) {
    const taken = unitToDelete(r, req, unit, 'seat')
    taking.written.set(taken._id, taken)
  }
  if (got.length > 0) await onMap(d, 'took', (m) => m.took(req.tierId, got.map(seatNumber)))
  return got
}

/**
 * Releases every reservation among `units` whose time has passed without being kept (lazily, on the read that finds
 * it), and returns the units still taken.
 */
export async function releaseLapsed<U extends TakenUnit>(d: TicketsDomain, units: U[]): Promise<U[]> {
  const now = nowOf(d).getTime()
  const lapsed = [...new Set(units.filter((u) => u.expiresAt.getTime() <= now).map((u) => u.reservationId))]
  if (lapsed.length === 0) return units
  const released = await releaseDue(d, lapsed)
  return units.filter((u) => !released.has(u.reservationId))
}

/** Ends each of these reservations, whose time has passed: released unless kept. Returns those released. */
async function releaseDue(d: TicketsDomain, lapsed: string[]): Promise<Set<string>> {
  const released = new Set<string>()
  await Promise.all(
    lapsed.map(async (id) => {
      if (await releaseShared(d, id)) released.add(id)
    }),
  )
  return released
}

/**
 * A release shared in this process: a crowd of readers meeting the same lapsed reservations joins one release of
 * each (its outcome inserted, or the one another reader inserted first read), instead of each reader deciding it.
 */
const releaseShared = (d: TicketsDomain, reservationId: string): Promise<boolean> => sharedRun(d.models, `release ${reservationId}`, () => releaseReservation(d, reservationId))

/**
 * The seat units of a tier taken now (lapsed reservations released first), read from the units: exact, for the
 * organizer's counts and capacity checks, which are rare.
 */
export async function takenSeats(d: TicketsDomain, tierId: string): Promise<TakenUnit[]> {
  return releaseLapsed(d, await readSeatUnits(d, tierId))
}

const readSeatUnits = (d: TicketsDomain, tierId: string): Promise<TakenUnit[]> =>
  d.models.CapacityUnit.find({ tierId, kind: 'seat' }, { unit: 1, reservationId: 1, expiresAt: 1 }).lean()

/** Which seats below a tier's range are taken now. */
export interface TakenSeatNumbers {
  count: number
  has(n: number): boolean
}

/**
 * The seats of a tier taken now, for choosing seats and counting them: from the seat map (seat-map.ts) when it is
 * built, releasing the reservations it says are due; otherwise from the units, building the map on the way.
 * `shared`: a read of the units is shared with concurrent requests (sharedRun), for the first look of a hold,
 * a claim or availability.
 */
export async function seatsTakenNow(d: TicketsDomain, tierId: string, range: number, opts: { shared?: boolean } = {}): Promise<TakenSeatNumbers> {
  const map = d.seatMap
  if (map) {
    let state = await readMap(d, tierId)
    if (state && state.due.length) {
      const due = state.due
      await releaseDue(d, due)
      await onMap(d, 'ended', (m) => m.ended(tierId, due))
      state = await readMap(d, tierId)
    }
    if (state) return fromBits(state.taken, range)
    if (state === null) {
      // not built (first use, or Redis lost its data): the units read for it answer this read too
      const units = await map.rebuild(tierId, () => readSeatUnits(d, tierId)).catch((err) => {
        d.logger?.warn({ err, tierId }, 'seat map: rebuild failed; reading the units')
        return null
      })
      if (units) return fromUnits(await releaseLapsed(d, units), range)
    }
  }
  const read = () => readSeatUnits(d, tierId)
  return fromUnits(await releaseLapsed(d, await (opts.shared ? sharedRun(d.models, `seats ${tierId}`, read) : read())), range)
}

/** The map's state; null when it is not built, undefined when Redis did not answer (then the units are read). */
async function readMap(d: TicketsDomain, tierId: string): Promise<SeatMapState | null | undefined> {
  try {
    return await d.seatMap!.read(tierId, nowOf(d))
  } catch (err) {
    d.logger?.warn({ err, tierId }, 'seat map: read failed; reading the units')
    return undefined
  }
}

/** Tells the map; the map only advises, so a failure is logged and the sweep's rebuild repairs what it missed. */
async function onMap(d: TicketsDomain, what: string, tell: (map: NonNullable<TicketsDomain['seatMap']>) => Promise<void>): Promise<void> {
  if (!d.seatMap) return
  try {
    await tell(d.seatMap)
  } catch (err) {
    d.logger?.warn({ err }, `seat map: ${what} failed; the sweep will repair it`)
  }
}

const BITS_SET = Uint8Array.from({ length: 256 }, (_, b) => {
  let n = 0
  for (let x = b; x; x >>= 1) n += x & 1
  return n
})

function fromBits(bits: Buffer, range: number): TakenSeatNumbers {
  let count = 0
  const whole = Math.min(bits.length, range >> 3)
  for (let i = 0; i < whole; i++) count += BITS_SET[bits[i]!]!
  for (let n = whole * 8; n < range && n >> 3 < bits.length; n++) if (bitIsSet(bits, n)) count++
  return { count, has: (n) => bitIsSet(bits, n) }
}

function fromUnits(units: TakenUnit[], range: number): TakenSeatNumbers {
  const taken = new Set<number>()
  for (const u of units) {
    const n = seatNumber(u.unit)
    if (n < range) taken.add(n)
  }
  return { count: taken.size, has: (n) => taken.has(n) }
}

/** The free seats of a tier: how many, and a few of them drawn at random. */
interface FreeSeats {
  count: number
  /** up to `k` distinct free seats, at random */
  draw(k: number): string[]
}

/**
 * Never lists the whole range: a tier may have 100,000 seats, and listing and shuffling them cost about half a second
 * of CPU per hold or claim. While at least half the seats are free, random seat numbers are drawn until enough free
 * ones come up; past that, the free numbers are listed and a partial Fisher-Yates shuffle draws from them.
 */
async function freeSeats(d: TicketsDomain, req: Pick<UnitRequest, 'tierId' | 'seatRange'>, opts: { shared?: boolean } = {}): Promise<FreeSeats> {
  const taken = await seatsTakenNow(d, req.tierId, req.seatRange, opts)
  const count = req.seatRange - taken.count
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
async function takeSeats(d: TicketsDomain, taking: Taking, r: Reservation, req: UnitRequest, count: number, firstRead: FreeSeats): Promise<string[]> {
  const got: string[] = []
  // the map learns when the reservation lapses before its first seat exists, so it can see every seat held lapse
  if (r.expiresAt < KEPT_UNTIL) await onMap(d, 'holding', (m) => m.holding(req.tierId, r.id, r.expiresAt))
  // A seat chosen from a read can be taken meanwhile by a concurrent reservation: each round tries a few of the free
  // seats at random, then reads again. Bounded, so a crowd on the last seats costs reads, not a storm of inserts.
  for (let round = 0; round < SEAT_ROUNDS && got.length < count; round++) {
    const free = round === 0 ? firstRead : await freeSeats(d, req)
    if (free.count === 0) break
    const tries = free.draw((count - got.length) * 2 + SEAT_TRIES_PER_ROUND)
    // never more at once than are still wanted, so no seat is taken beyond the count
    for (let next = 0; next < tries.length && got.length < count; ) {
      const batch = tries.slice(next, next + Math.min(count - got.length, SEATS_PER_INSERT))
      next += batch.length
      got.push(...(await takeSeatBatch(d, taking, r, req, batch)))
    }
  }
  return got
}

/** Takes the buyer's `count` shares of the tier; returns the units taken. */
async function takeShares(d: TicketsDomain, taking: Taking, r: Reservation, req: UnitRequest & { buyer: NonNullable<UnitRequest['buyer']> }, count: number): Promise<string[]> {
  const got: string[] = []
  const slots = await openShareSlots(d, req)
  const sharesHeld = () => d.models.CapacityUnit.find({ tierId: req.tierId, kind: 'buyer', buyerDid: req.buyer.did }, { unit: 1, reservationId: 1, expiresAt: 1 }).lean()
  for (let round = 0; round < 2 && got.length < count; round++) {
    if (round > 0) {
      // a share still held by a lapsed hold is freed, then tried again
      const held = await sharesHeld()
      if ((await releaseLapsed(d, held)).length === held.length) break
    }
    // the buyer's shares held when the first number tried was found taken: those are not tried one by one (a buyer at
    // the limit asking again would cost two commands per number), and too few left free ends the round at once
    let held: Set<string> | null = null
    for (let k = 0; k < slots && got.length < count; k++) {
      const unit = buyerUnit(req.tierId, req.buyer.did, k)
      if (got.includes(unit) || held?.has(unit)) continue
      if (await take(d, taking, r, req, unit, 'buyer')) {
        got.push(unit)
        continue
      }
      // a twin of this order holds the share: stop here rather than split the buyer's shares with it
      if (r.orderKey && (await d.models.CapacityUnit.exists({ unit, orderKey: r.orderKey }))) return got
      if (held === null) {
        held = new Set((await sharesHeld()).map((u) => u.unit))
        let free = 0
        for (let j = k; j < slots; j++) if (!held.has(buyerUnit(req.tierId, req.buyer.did, j))) free++
        if (free < count - got.length) break
      }
    }
  }
  return got
}

/**
 * How many of the buyer's share numbers a taker may use: perBuyerLimit, unless the limit was lowered since the buyer
 * took shares numbered at or above it; then fewer, so those shares count against it too (they hold no number a taker
 * tries). Nothing numbers a share at or above the slots it reads, so those only go: a read from before one went
 * leaves fewer slots, never more. A hold in flight as the limit is lowered takes its shares under the limit it read.
 */
async function openShareSlots(d: TicketsDomain, req: UnitRequest & { buyer: NonNullable<UnitRequest['buyer']> }): Promise<number> {
  const { perBuyerLimit, shareRange = perBuyerLimit } = req.buyer
  if (shareRange <= perBuyerLimit) return perBuyerLimit
  const held = await d.models.CapacityUnit.find({ tierId: req.tierId, kind: 'buyer', buyerDid: req.buyer.did }, { unit: 1, reservationId: 1, expiresAt: 1 }).lean()
  const numbers = (await releaseLapsed(d, held)).map((u) => Number(u.unit.slice(u.unit.lastIndexOf('#') + 1)))
  // the most numbers 0 … slots - 1 such that they and the shares held at or above them stay within the limit
  let slots = perBuyerLimit
  while (slots > 0 && slots + numbers.filter((k) => k >= slots).length > perBuyerLimit) slots--
  return slots
}

/**
 * Takes every unit the requests ask for under one reservation, or none: on a shortage, or an error, the units this
 * call took are deleted again (by `_id`: only this reservation's) and the result names what was lacking. Of the units
 * whose insert had no answer, those found written are deleted too; the others (refused as another's, or never
 * written) are left alone, on the seat map as well.
 */
export async function reserve(d: TicketsDomain, r: Reservation, requests: UnitRequest[]): Promise<ReserveResult> {
  const taking: Taking = { written: new Map(), unsure: new Map() }
  const undo = async () => {
    await deleteUnits(d, [...taking.written.values()])
    await deleteUnitsById(d, taking.unsure.keys())
    // it holds nothing now: not due to lapse
    for (const tierId of new Set(requests.map((req) => req.tierId))) await onMap(d, 'ended', (m) => m.ended(tierId, [r.id]))
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
        const shares = await takeShares(d, taking, r, { ...req, buyer: req.buyer }, req.quantity)
        if (shares.length < req.quantity) {
          await undo()
          return { ok: false, lacking: 'buyer', tierId: req.tierId }
        }
      }
      const seats = await takeSeats(d, taking, r, req, req.quantity, firstReads.get(req)!)
      if (seats.length < req.quantity) {
        await undo()
        return { ok: false, lacking: 'seat', tierId: req.tierId }
      }
    }
    return { ok: true }
  } catch (err) {
    await undo().catch((undoErr: unknown) => {
      d.logger?.warn({ err: undoErr, reservationId: r.id }, 'reservation: its undo after an error failed too; the units it took stay (a hold\'s lapse with it)')
    })
    throw err
  }
}

/** Inserts the reservation's outcome; returns the outcome that stands (this one, or the one inserted first). */
export async function decide(d: TicketsDomain, reservationId: string, outcome: 'kept' | 'released'): Promise<'kept' | 'released'> {
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
  // again on every call (a process may have stopped between the decision and this), writing only what is not kept yet
  await d.models.CapacityUnit.updateMany({ reservationId, expiresAt: { $ne: KEPT_UNTIL } }, { $set: { expiresAt: KEPT_UNTIL } })
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
  const units = await d.models.CapacityUnit.find({ reservationId }, { _id: 1, unit: 1, kind: 1, tierId: 1 }).lean()
  await deleteUnits(d, units)
  for (const tierId of new Set(units.map((u) => u.tierId))) await onMap(d, 'ended', (m) => m.ended(tierId, [reservationId]))
}

/** Deletes those of these units that exist (by `_id`, see deleteUnitsOf), for a voided ticket or an undone reservation. */
export async function deleteUnitsById(d: TicketsDomain, ids: Iterable<string>): Promise<void> {
  await deleteUnits(d, await findEach(ids, (id) => d.models.CapacityUnit.findById(id, { _id: 1, unit: 1, kind: 1, tierId: 1 }).lean()))
}

/**
 * Every unit deletion goes through here. The map frees the seats before the delete, so a process that stops after it
 * leaves no seat the map shows taken. (Not again after it: a seat taken by another reservation in between would be
 * shown free.)
 */
export async function deleteUnits(d: TicketsDomain, units: UnitToDelete[]): Promise<void> {
  if (units.length === 0) return
  await freeOnMap(d, units)
  await deleteByIds(d.models.CapacityUnit, units.map((u) => u._id))
}

/** Tells the map the seats among these units are free (before their delete: see deleteUnits). */
async function freeOnMap(d: TicketsDomain, units: UnitToDelete[]): Promise<void> {
  const seats = new Map<string, number[]>()
  for (const u of units) {
    if (u.kind !== 'seat') continue
    const numbers = seats.get(u.tierId) ?? []
    numbers.push(seatNumber(u.unit))
    seats.set(u.tierId, numbers)
  }
  await Promise.all([...seats].map(([tierId, ns]) => onMap(d, 'freed', (m) => m.freed(tierId, ns))))
}

/**
 * Deletes these units of one reservation (the organizer's block, when a capacity is raised) in one command: FerretDB
 * reads the reservation's units by equality and deletes those named, where a delete per unit costs a statement each.
 */
export async function deleteUnitsOfReservation(d: TicketsDomain, reservationId: string, units: UnitToDelete[]): Promise<void> {
  if (units.length === 0) return
  await freeOnMap(d, units)
  const all = (await d.models.CapacityUnit.countDocuments({ reservationId })) === units.length
  await d.models.CapacityUnit.deleteMany(all ? { reservationId } : { reservationId, _id: { $in: units.map((u) => u._id) } })
}

/**
 * The sweep's part: rebuilds from the units the map of each tier read lately whose last rebuild is older than the
 * map's reconcile period, repairing what a process that stopped between a unit's write and the map's left behind.
 */
export async function reconcileSeatMaps(d: TicketsDomain): Promise<number> {
  if (!d.seatMap) return 0
  const seatMap = d.seatMap
  let rebuilt = 0
  await finishEach('seat map rebuilds', await seatMap.stale(), async (tierId) => {
    if (await seatMap.rebuild(tierId, () => readSeatUnits(d, tierId))) rebuilt++
  })
  return rebuilt
}
