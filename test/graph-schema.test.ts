/** gateway/schema.graphql is exactly the schema the gateway composes from today's subgraphs (run `npm run generate`). */
import { readFileSync } from 'node:fs'
import { composeGraphSchema, GRAPH_SCHEMA_PATH } from './graph-schema'

test('the checked-in composed schema is what the gateway composes from the subgraphs', async () => {
  const composed = await composeGraphSchema()
  expect(composed).toContain('type Query')
  expect(composed).toContain('paymentStatus(token: String!): PaymentStatus!')
  expect(readFileSync(GRAPH_SCHEMA_PATH, 'utf8')).toBe(composed)
})
