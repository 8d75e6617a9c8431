/**
 * The gateway's cost rule on the composed schema (gateway/schema.graphql), validated as the gateway validates: a
 * page passes its `limit` to the list in it, and an operation has at most MAX_ROOT_FIELDS fields at its top.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { buildSchema, parse, specifiedRules, validate } from 'graphql'
import { costWithVariables, LIMITS_BY_VARIABLE, LIST_COST, MAX_QUERY_COST, MAX_ROOT_FIELDS, maxQueryCost, operationCost } from '../src/query-cost'

const schema = buildSchema(readFileSync(join(__dirname, '..', 'schema.graphql'), 'utf8'), { assumeValidSDL: true })
const errorsOf = (query: string) => validate(schema, parse(query), [...specifiedRules, maxQueryCost]).map((e) => e.message)
const costOf = (query: string) => {
  const document = parse(query)
  const operation = document.definitions[0] as { selectionSet: Parameters<typeof operationCost>[2] }
  return operationCost(schema, document, operation.selectionSet, schema.getQueryType())
}
const TICKET = '{ id tierName buyerDid status }'

test("a page's limit counts for the list in it, as a list's own limit does", () => {
  const page = (limit: string) => `{ organizerEvent(eventUri: "at://e") { ticketPage${limit} { tickets ${TICKET} nextCursor } } }`
  // organizerEvent, ticketPage, tickets, nextCursor: 4, and the 4 fields of each ticket
  expect(costOf(page('(limit: 5000)'))).toBe(4 + 5000 * 4)
  expect(costOf(page('(limit: 10)'))).toBe(4 + 10 * 4)
  // without one, the default its SDL declares (what the subgraph answers: 200 tickets), not LIST_COST
  expect(costOf(page(''))).toBe(4 + 200 * 4)
  // through a fragment on the page too
  expect(costOf(`{ organizerEvent(eventUri: "at://e") { ticketPage(limit: 5000) { ...P } } } fragment P on OrganizerTicketPage { tickets ${TICKET} }`)).toBe(3 + 5000 * 4)
})

test('a list field without a limit costs the default its SDL declares; one that declares none, LIST_COST', () => {
  const entry = '{ requestId path status durationMs method }'
  expect(costOf(`{ requestLog ${entry} }`)).toBe(1 + 50 * 5)
  expect(costOf(`{ deliveries(appDid: "did:web:a", environment: "test") { id } }`)).toBe(1 + 20)
  expect(costOf(`{ requestLog(limit: 7) ${entry} }`)).toBe(1 + 7 * 5)
  expect(costOf(`{ organizerEvent(eventUri: "at://e") { tiers { name } } }`)).toBe(2 + LIST_COST)
})

test('pages of 5,000 tickets under aliases are refused (each was costed as 20 tickets: 540 of them passed)', () => {
  const pages = Array.from({ length: 6 }, (_, i) => `p${i}: ticketPage(limit: 5000) { tickets ${TICKET} }`).join(' ')
  expect(errorsOf(`{ organizerEvent(eventUri: "at://e") { ${pages} } }`)).toEqual([expect.stringMatching(/asks too much at once/)])
  expect(6 * 5000 * 4).toBeGreaterThan(MAX_QUERY_COST)
  expect(errorsOf(`{ organizerEvent(eventUri: "at://e") { ticketPage(limit: 5000) { tickets ${TICKET} } } }`)).toEqual([])
})

test(`an operation selects at most ${MAX_ROOT_FIELDS} fields at its top, through fragments too; __typename aside`, () => {
  const roots = (n: number) => Array.from({ length: n }, (_, i) => `a${i}: dashboardActor { did }`).join(' ')
  expect(errorsOf(`{ ${roots(MAX_ROOT_FIELDS)} __typename }`)).toEqual([])
  expect(errorsOf(`{ ${roots(MAX_ROOT_FIELDS + 1)} }`)).toEqual([expect.stringMatching(new RegExp(`at most ${MAX_ROOT_FIELDS} fields at its top`))])
  expect(errorsOf(`{ ${roots(MAX_ROOT_FIELDS)} ...More } fragment More on Query { more: dashboardActor { did } }`)).toEqual([
    expect.stringMatching(/at most \d+ fields at its top/),
  ])
  expect(errorsOf(`{ ${roots(MAX_ROOT_FIELDS)} ... on Query { more: dashboardActor { did } } }`)).toEqual([expect.stringMatching(/at most \d+ fields at its top/)])
  // mutations as well: 600 test deliveries at a cost of 1,200 were queued by one request
  const mutations = Array.from({ length: MAX_ROOT_FIELDS + 1 }, (_, i) => `m${i}: createTestDelivery(appDid: $a, environment: $e) { id }`).join(' ')
  expect(errorsOf(`mutation($a: ID!, $e: String!) { ${mutations} }`)).toEqual([expect.stringMatching(/at most \d+ fields at its top/)])
})

test("a limit given by a variable costs the request's value, else the variable's default, else the field's", () => {
  const query = (declaration: string) =>
    `query Q(${declaration}) { organizerEvent(eventUri: "at://e") { ${Array.from({ length: 6 }, (_, i) => `p${i}: ticketPage(limit: $l) { tickets ${TICKET} }`).join(' ')} } }`
  // validation sees no variables: without a default the limit counts as the field's (200), so it passes there
  expect(errorsOf(query('$l: Int'))).toEqual([])
  // a default of 5000 is costed in validation already
  expect(errorsOf(query('$l: Int = 5000'))).toEqual([expect.stringMatching(/asks too much at once/)])
  // before it runs: the request's value (5000: 6 pages × 5000 tickets × 4 fields), or the default when none is given
  expect(costWithVariables(schema, parse(query('$l: Int')), { l: 5000 })?.message).toMatch(/asks too much at once/)
  expect(costWithVariables(schema, parse(query('$l: Int')), { l: 200 })).toBeNull()
  expect(costWithVariables(schema, parse(query('$l: Int')), {})).toBeNull()
  expect(costWithVariables(schema, parse(query('$l: Int = 5000')), { l: 10 })).toBeNull()
  expect(costWithVariables(schema, parse(query('$l: Int = 5000')), {})?.message).toMatch(/asks too much at once/)
  // an explicit null is passed on as null, not the variable's default: the field answers its own default (200)
  const many = `query Q($l: Int = 1) { organizerEvent(eventUri: "at://e") { ${Array.from({ length: 130 }, (_, i) => `p${i}: ticketPage(limit: $l) { tickets ${TICKET} }`).join(' ')} } }`
  expect(costWithVariables(schema, parse(many), {})).toBeNull()
  expect(costWithVariables(schema, parse(many), { l: null })?.message).toMatch(/asks too much at once/)
  // a list's own limit as well, through a fragment
  const log = `query L($n: Int) { ${Array.from({ length: 20 }, (_, i) => `a${i}: requestLog(limit: $n) { ...R }`).join(' ')} } fragment R on RequestLogEntry { requestId path status durationMs method }`
  expect(costWithVariables(schema, parse(log), { n: 5000 })?.message).toMatch(/asks too much at once/)
  expect(costWithVariables(schema, parse(log), { n: 200 })).toBeNull()
  // validation marks the documents to cost again with each request's values (the gateway's preExecution hook)
  const marked = (query: string) => {
    const document = parse(query)
    validate(schema, document, [...specifiedRules, maxQueryCost])
    return LIMITS_BY_VARIABLE.has(document)
  }
  expect(marked(log)).toBe(true)
  expect(marked(query('$l: Int'))).toBe(true)
  expect(marked(`{ requestLog(limit: 5) { requestId } }`)).toBe(false)
  expect(marked(`query($d: ID!) { app(did: $d) { did } }`)).toBe(false)
})
