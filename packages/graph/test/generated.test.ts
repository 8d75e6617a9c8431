/** The checked-in src/generated/ is exactly what @graphql-codegen makes from today's documents and composed schema. */
import { readFileSync } from 'node:fs'
import { generateGraphTypes } from '../scripts/codegen'

test('every generated file is up to date (run `npm run generate`)', async () => {
  const files = await generateGraphTypes()
  expect(files.map((f) => f.filename.replace(/.*\/packages\/graph\//, ''))).toEqual(['src/generated/gql.ts', 'src/generated/graphql.ts', 'src/generated/index.ts'])
  for (const f of files) expect(readFileSync(f.filename, 'utf8')).toBe(f.content)
  // every process that calls the graph has its documents typed here
  const gql = files.find((f) => f.filename.endsWith('gql.ts'))!.content
  for (const op of [
    'query PaymentsCheckoutFacts', // a domain reading another (payments)
    'mutation AppsEnsureSigningSecret', // a domain asking another for a change (apps → events)
    'query EventEndpoint', // the events workers
    'query PaymentStatus', // an XRPC method
    'query CheckoutPage', // the hosted checkout
    'query DashboardHome', // the creator dashboard
    'query DeveloperAccess', // the developer routes
  ]) {
    expect(gql).toContain(op)
  }
})
