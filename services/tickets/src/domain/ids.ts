/** Ids of the tickets domain: a prefix and 24 hex characters. */
import { createHash, randomBytes } from 'node:crypto'

/**
 * The id of the tier the `n`-th entry of a configuration call creates, derived from the event and the call's whole list
 * of tiers: a repeat of the call names the same tiers, so it creates none twice.
 */
export function createdTierId(eventKey: string, call: unknown[], n: number): string {
  return `tier_${createHash('sha256').update(JSON.stringify([eventKey, call, n])).digest('hex').slice(0, 24)}`
}

/**
 * A free claim's ticket id derives from its whole scope, so every retry and duplicate names the same ticket. A claim
 * without a key (null) is apart from every keyed one (a key is never empty).
 */
export function claimTicketId(scope: { appDid: string; environment: string; eventUri: string; tierId: string; buyerDid: string; idempotencyKey: string | null }): string {
  const parts = [scope.appDid, scope.environment, scope.eventUri, scope.tierId, scope.buyerDid, scope.idempotencyKey]
  return `ticket_${createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 24)}`
}

/** The ticket ids a paid hold issues: one per unit of each item, derived from the hold, so issuing twice is a no-op. */
export function purchaseTicketIds(holdId: string, items: { ticketTypeId: string; quantity: number }[]): { id: string; tierId: string; n: number }[] {
  return items.flatMap((item) =>
    Array.from({ length: item.quantity }, (_, n) => ({
      id: `ticket_${createHash('sha256').update(JSON.stringify([holdId, item.ticketTypeId, n])).digest('hex').slice(0, 24)}`,
      tierId: item.ticketTypeId,
      n,
    })),
  )
}

/** A ticket's scan token: 192 random bits, opaque (docs/tickets.md, "The buyer's tickets"). */
export const newScanToken = (): string => `tkt_${randomBytes(24).toString('base64url')}`

/** A ticket page's token (@svc/vocabulary `TICKET_PAGE_TOKEN_RE`): it names the ticket, so the page is a read by id. */
export const newPageToken = (ticketId: string): string => `tkp_${ticketId.replace(/^ticket_/, '')}_${randomBytes(24).toString('base64url')}`
