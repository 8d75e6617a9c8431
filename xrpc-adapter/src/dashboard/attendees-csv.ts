/**
 * The attendee list as CSV (csv-stringify). A cell that a spreadsheet would read as a formula (it starts with =, +,
 * -, @, a tab, a carriage return or a line feed, or with one of =, +, -, @ after blanks, which an import that trims
 * cells would then read) gets a leading apostrophe, so a tier name or an app's order id can never run as one (OWASP,
 * "CSV injection"). Every cell is quoted: a spreadsheet whose list separator is `;` (Excel in German, French, Dutch
 * regions) splits an unquoted `VIP;=HYPERLINK(…)` into a cell that starts with `=`.
 */
import { stringify } from 'csv-stringify/sync'
import type { AttendeesData } from './ticket-operations'

// \s covers the tab, line breaks, no-break and other Unicode spaces and the BOM; the zero-width ones are named
const FORMULA_START = /^[\s\u200b-\u200d\u2060]*[=+\-@]|^[\t\r\n]/u

export const escapeFormula = (cell: string): string => (FORMULA_START.test(cell) ? `'${cell}` : cell)

type AttendeesPage = AttendeesData['organizerEvent']['ticketPage']

/** Rows as CSV, every cell quoted (above). */
export const csvRows = (rows: string[][]): string => stringify(rows, { quoted: true })

/**
 * The attendee list, a page of tickets at a time: the header and the first page (read before the answer starts, so a
 * refusal is a page of its own), then each next page as it is read.
 */
export async function* attendeesCsv(first: AttendeesPage, next: (after: string) => Promise<AttendeesPage>): AsyncGenerator<string> {
  yield csvRows([['ticket', 'tier', 'buyer', 'status', 'source', 'app order', 'issued at']])
  for (let page = first; ; page = await next(page.nextCursor!)) {
    const rows = page.tickets.map((t) => [t.id, t.tierName, t.buyerDid, t.status, t.source, t.appOrderId ?? '', t.issuedAt].map(escapeFormula))
    if (rows.length) yield csvRows(rows)
    if (!page.nextCursor) return
  }
}
