/**
 * The README's tickets walk-through is runnable: `npm run example:tickets` (its own process, as a developer runs it)
 * against the whole stack in this process. It must end with one issued ticket, returned again by the retry.
 */
import { startStack, type TestStack } from '../../stack'
import { runExample } from './run-example'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('example_tickets')
})
afterAll(async () => {
  await stack?.stop()
})

test('npm run example:tickets sets up a free tier and claims one ticket, idempotently', async () => {
  const stdout = await runExample(stack, 'example-tickets.ts')
  expect(stdout).toMatch(/3\. available: 2\n/)
  const id = /4\. the buyer claimed: ticket (ticket_[0-9a-f]{24}) issued/.exec(stdout)?.[1]
  expect(id).toBeDefined()
  expect(stdout).toContain(`5. the same claim again (same key, same assertion): ticket ${id} issued`)
  expect(stdout).toMatch(/6\. available: 1\n/)
  expect(await stack.tickets.Ticket.countDocuments({ _id: id })).toBe(1)
}, 180_000)
