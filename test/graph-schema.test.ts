/** gateway/schema.graphql is exactly the schema the gateway composes from today's subgraphs (run `npm run generate`). */
import { readFileSync } from 'node:fs'
import { generateSubgraphTypes } from '@svc/graph/scripts/subgraph-types'
import { composeGraphSchema, GRAPH_SCHEMA_PATH, SUBGRAPHS } from './graph-schema'

test('the checked-in composed schema is what the gateway composes from the subgraphs', async () => {
  const composed = await composeGraphSchema()
  expect(composed).toContain('type Query')
  expect(composed).toContain('paymentStatus(token: String!): PaymentStatus!')
  expect(readFileSync(GRAPH_SCHEMA_PATH, 'utf8')).toBe(composed)
})

test("each subgraph's checked-in graph-types.ts is what @graphql-codegen makes from its SDL", async () => {
  const files = await generateSubgraphTypes(SUBGRAPHS)
  expect(files.map((f) => f.filename.replace(/.*\/services\//, ''))).toEqual(SUBGRAPHS.map((s) => `${s.name}/src/generated/graph-types.ts`))
  expect(files.find((f) => f.filename.includes('/payments/'))!.content).toContain('export type CheckoutView = {')
  for (const f of files) expect(readFileSync(f.filename, 'utf8')).toBe(f.content)
})
