/**
 * A hold meets its payment (docs/tickets.md, "Paying a hold"). The payments domain calls these two, as the service
 * `payments`, for a checkout that carries a hold id:
 *
 * - `secureHold` right before the buyer's payment is claimed and the card charged: the hold's reservation is kept
 *   (its seats stop lapsing) unless it was released first. A hold that lapsed is never charged for: the payment is
 *   refused with no charge, so no ticket is ever paid for and then missing, and no refund is ever owed.
 * - `settleHold` once the checkout has its outcome: paid, the hold's tickets are issued (their ids derive from the
 *   hold, so a repeat is a no-op) and announced; failed (declined, canceled, expired), the hold's capacity returns.
 *
 * Both are idempotent: payments calls them again after a crash (its sweep and every read of the checkout re-run the
 * settlement) until they answer.
 */
import { ContractError } from '@svc/errors'
import { isDuplicateKeyError, type TicketDoc, type TicketHoldDoc } from '../models'
import { announceHoldTickets } from './announce'
import { deleteUnitsOf, keepReservation, releaseReservation } from './capacity'
import { nowOf, type TicketsDomain } from './context'
import { expireHold } from './expire-hold'
import { newPageToken, newScanToken, purchaseTicketIds } from './ids'

type StoredHold = TicketHoldDoc & { _id: string }

async function findHold(d: TicketsDomain, holdId: string): Promise<StoredHold> {
  const hold = (await d.models.TicketHold.findById(holdId).lean()) as StoredHold | null
  if (!hold) throw new ContractError('NotFound', `hold ${holdId} does not exist`)
  return hold
}

/**
 * Keeps the hold's seats for its payment: true, or false when the hold lapsed or its checkout ended first. A hold
 * past its expiresAt that no job or read has released yet is released here, so a lapsed hold is never charged.
 */
export async function secureHold(d: TicketsDomain, holdId: string): Promise<boolean> {
  const hold = await findHold(d, holdId)
  if (hold.status === 'released') return false
  if (hold.status === 'paid') return true
  // the release and the keep are one decision (its outcome's insert): a secure that came first still wins
  if (hold.expiresAt <= nowOf(d)) await expireHold(d, holdId)
  return keepReservation(d, holdId)
}

export interface HoldPayment {
  checkoutId: string
  /** the payment record's AT-URI */
  paymentUri: string
}

/** Issues the hold's tickets (`paid`), or returns its capacity (`null`: the checkout failed). Returns the tickets. */
export async function settleHold(d: TicketsDomain, holdId: string, payment: HoldPayment | null): Promise<TicketDoc[]> {
  const found = (await d.models.TicketHold.findById(holdId).lean()) as StoredHold | null
  // a hold is deleted only once released (its checkout refused for good); a checkout a concurrent start inserted for
  // it anyway could never be paid (secureHold finds no hold), and when it fails there is nothing to give back
  if (!found && !payment) return []
  if (!found) throw new ContractError('NotFound', `hold ${holdId} does not exist`)
  const hold = found
  if (!payment) {
    if (hold.status === 'paid') throw new Error(`hold ${holdId} is paid; its checkout cannot have failed`)
    // not kept: released here; kept (secured before a payment that failed): its seats are deleted
    if (!(await releaseReservation(d, holdId))) await deleteUnitsOf(d, holdId)
    if (hold.status !== 'released') await d.models.TicketHold.updateOne({ _id: holdId }, { $set: { status: 'released' } })
    d.logger?.info({ holdId, environment: hold.environment, appDid: hold.appDid }, 'hold released: its checkout failed')
    return []
  }
  if (hold.status === 'released') throw new Error(`hold ${holdId} was released; it cannot have been paid`)
  // the payment was claimed after secureHold kept the seats; this only confirms it
  if (!(await keepReservation(d, holdId))) throw new Error(`hold ${holdId} was paid but its reservation was released`)
  const now = nowOf(d)
  const ids = purchaseTicketIds(holdId, hold.items)
  // each ticket gets one seat and one buyer share of its tier from the hold's units, in a fixed order: the missing
  // ones get, in ticket order, the units no existing ticket has. So every run assigns the same units, also after a
  // ticket inserted by an earlier run was voided (its units deleted), which shifted positions in the units left.
  // The units are read before the tickets: a ticket voided after this read is among the tickets read after it
  const units = await d.models.CapacityUnit.find({ reservationId: holdId }, { _id: 1, tierId: 1, kind: 1, unit: 1 }).lean()
  // a repeat (after a crash mid-insert, or alongside another run) inserts only the tickets still missing
  const existing = await d.models.Ticket.find({ holdId }, { _id: 1, unitIds: 1 }).lean()
  const inserted = new Set(existing.map((t) => t._id))
  const taken = new Set(existing.flatMap((t) => t.unitIds ?? []))
  const free = new Map<string, string[]>()
  for (const u of [...units].sort((a, b) => a.unit.localeCompare(b.unit))) {
    if (taken.has(u._id)) continue
    const key = `${u.tierId} ${u.kind}`
    const list = free.get(key) ?? []
    list.push(u._id)
    free.set(key, list)
  }
  const next = (tierId: string, kind: string) => free.get(`${tierId} ${kind}`)?.shift()
  const tickets: TicketDoc[] = ids
    .filter(({ id }) => !inserted.has(id))
    .map(({ id, tierId }) => ({
      _id: id,
      appDid: hold.appDid,
      environment: hold.environment,
      eventUri: hold.eventUri,
      tierId,
      buyerDid: hold.buyerDid,
      reservationId: holdId,
      status: 'issued',
      source: 'purchase',
      holdId,
      appOrderId: hold.appOrderId,
      secret: newScanToken(),
      pageToken: newPageToken(id),
      unitIds: [next(tierId, 'seat'), next(tierId, 'buyer')].filter((u): u is string => u !== undefined),
      announced: false,
      createdAt: now,
    }))
  try {
    if (tickets.length > 0) await d.models.Ticket.insertMany(tickets, { ordered: false })
  } catch (err) {
    // a concurrent run inserted some of them first (the same units: the assignment is the same)
    if (!isDuplicateKeyError(err)) throw err
  }
  const byId = new Map((await d.models.Ticket.find({ holdId }).lean()).map((t) => [t._id, t]))
  const stored = ids.flatMap(({ id }) => byId.get(id) ?? [])
  if (stored.length !== ids.length) throw new Error(`hold ${holdId}: ${ids.length - stored.length} of its tickets are missing after their insert`)
  await announceHoldTickets(d, stored)
  if (hold.status !== 'paid') await d.models.TicketHold.updateOne({ _id: holdId }, { $set: { status: 'paid', checkoutId: payment.checkoutId, paymentUri: payment.paymentUri } })
  d.logger?.info({ holdId, environment: hold.environment, appDid: hold.appDid, tickets: stored.length }, 'hold paid: tickets issued')
  return stored
}
