/**
 * The attendee list as CSV (csv-stringify). A cell that a spreadsheet would read as a formula (it starts with =, +,
 * -, @, a tab or a carriage return) gets a leading apostrophe, so a tier name or an app's order id can never run as
 * one (OWASP, "CSV injection").
 */
import { stringify } from 'csv-stringify/sync'
import type { OrganizerEventData } from './ticket-operations'

const FORMULA_START = /^[=+\-@\t\r]/

export const escapeFormula = (cell: string): string => (FORMULA_START.test(cell) ? `'${cell}` : cell)

export function attendeesCsv(event: OrganizerEventData['organizerEvent']): string {
  const rows = event.tickets.map((t) => [t.id, t.tierName, t.buyerDid, t.status, t.source, t.appOrderId ?? '', t.issuedAt].map(escapeFormula))
  return stringify([['ticket', 'tier', 'buyer', 'status', 'source', 'app order', 'issued at'], ...rows])
}
