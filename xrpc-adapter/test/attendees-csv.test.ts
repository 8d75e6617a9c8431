/** The attendee CSV's formula escaping alone (the export through the dashboard: test/e2e/tickets/organizer-dashboard.test.ts). */
import { csvRows, escapeFormula } from '../src/dashboard/attendees-csv'

test.each(['=1+1', '+1', '-2+3', '@SUM(A1)', '\t=1', '\r=1', '\n=1+1', ' =1+1', '  -2+3', ' \t@SUM(A1)', '\u00a0=1+1', '\u200b=1', '\ufeff+1', '\u3000=1'])(
  '%j would run as a formula: it gets an apostrophe',
  (cell) => {
    expect(escapeFormula(cell)).toBe(`'${cell}`)
  },
)

test.each(['GA', 'did:plc:abc', 'order 12-3', 'a=b', ' spaced', '', '£5 + VAT'])('%j is kept as it is', (cell) => {
  expect(escapeFormula(cell)).toBe(cell)
})

test('every cell is quoted: a spreadsheet splitting on ";" never finds a cell starting with a formula', () => {
  // before, csv-stringify quoted only cells holding a comma, a quote or a line break: `VIP;=HYPERLINK(F2&C3)` went bare
  expect(csvRows([['VIP;=HYPERLINK(F2&C3)', 'x;+1', 'plain', 'say "hi", ok'].map(escapeFormula)])).toBe('"VIP;=HYPERLINK(F2&C3)","x;+1","plain","say ""hi"", ok"\n')
})
