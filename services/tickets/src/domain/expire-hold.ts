/**
 * A hold's expiry, on time: the `ticket-holds` job due at its `expiresAt` (hold-expiry.ts) releases the hold's
 * seats and shares unless its payment secured them first. Reads release lapsed holds too, so a lost job only means
 * the seats come back at the next read; the release happens once either way (capacity.ts, its outcome document).
 */
import { releaseReservation } from './capacity'
import { nowOf, type TicketsDomain } from './context'

export type HoldExpiry = 'released' | 'kept' | 'settled' | 'unknown' | 'not due'

export async function expireHold(d: TicketsDomain, holdId: string): Promise<HoldExpiry> {
  const hold = await d.models.TicketHold.findById(holdId, { status: 1, expiresAt: 1 }).lean()
  if (!hold) return 'unknown'
  // paid (its tickets keep the seats) or released by its failed checkout
  if (hold.status !== 'held') return 'settled'
  if (hold.expiresAt.getTime() > nowOf(d).getTime()) return 'not due'
  return (await releaseReservation(d, holdId)) ? 'released' : 'kept'
}
