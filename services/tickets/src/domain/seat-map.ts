/**
 * The seat map: a copy of which seats of a tier are taken, one bit per seat, and of the reservations holding them
 * that will lapse, kept beside the units so that choosing seats and counting them never reads every unit of a large
 * tier (docs/tickets.md, "The seat map"). It only advises: the units are the record and their unique index decides,
 * so a map that is behind can make a hold try a taken seat (the insert is refused and it tries another), never take
 * one twice. The map is rebuilt from the units when it is missing (Redis lost its data) and reconciled with them by
 * the sweep; until it is built, reads take the units as before.
 */
import type { CapacityUnitDoc } from '../models'

export type TakenUnit = Pick<CapacityUnitDoc, 'unit' | 'reservationId' | 'expiresAt'>

export interface SeatMapState {
  /** bit n (most significant bit of byte 0 first) set: seat n is taken */
  taken: Buffer
  /** reservations of the tier whose expiresAt has passed: the reader releases those not kept */
  due: string[]
}

export interface SeatMap {
  /** the tier's map, or null while it is not built */
  read(tierId: string, now: Date): Promise<SeatMapState | null>
  /** before a reservation inserts seats of the tier: it lapses at `expiresAt` unless kept */
  holding(tierId: string, reservationId: string, expiresAt: Date): Promise<void>
  /** seats inserted */
  took(tierId: string, seats: number[]): Promise<void>
  /** seats whose units are about to be deleted */
  freed(tierId: string, seats: number[]): Promise<void>
  /** reservations that were kept or released: no longer due */
  ended(tierId: string, reservationIds: string[]): Promise<void>
  /**
   * Builds the tier's map from `readUnits` (read after the map starts logging what changes meanwhile), unless
   * another rebuild of it is under way: the units read, or null when it did not run.
   */
  rebuild(tierId: string, readUnits: () => Promise<TakenUnit[]>): Promise<TakenUnit[] | null>
  /**
   * tiers read lately whose map was not rebuilt for a while, or all of them once Redis restarted or failed over since
   * the last call (their maps are then unbuilt, so reads take the units): the sweep reconciles them
   */
  stale(): Promise<string[]>
}

/** The seat number of a seat unit (`<tierId>#<n>`). */
export const seatNumber = (unit: string): number => Number(unit.slice(unit.lastIndexOf('#') + 1))

/** Seat `n` as a bit of the map. */
export const bitIsSet = (bits: Buffer, n: number): boolean => {
  const byte = n >> 3
  return byte < bits.length && (bits[byte]! & (0x80 >> (n & 7))) !== 0
}

/** The map of `seats`, as Redis stores a bitmap. */
export function bitsOf(seats: Iterable<number>): Buffer {
  const list = [...seats]
  let last = -1
  for (const n of list) if (n > last) last = n
  const bits = Buffer.alloc(last < 0 ? 0 : (last >> 3) + 1)
  for (const n of list) bits[n >> 3]! |= 0x80 >> (n & 7)
  return bits
}

/** The seat numbers below `range` that are set. */
export function setSeats(bits: Buffer, range: number): Set<number> {
  const seats = new Set<number>()
  const end = Math.min(bits.length, (range + 7) >> 3)
  for (let byte = 0; byte < end; byte++) {
    const b = bits[byte]!
    if (b === 0) continue
    for (let i = 0; i < 8; i++) {
      const n = byte * 8 + i
      if (n < range && b & (0x80 >> i)) seats.add(n)
    }
  }
  return seats
}
