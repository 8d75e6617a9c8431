/**
 * The README's tickets walk-through is runnable: `npm run example:tickets` (its own process, as a developer runs it)
 * against the whole stack in this process. It must give away one ticket, returned again by the retry, then sell two:
 * a hold, its checkout paid with a test card, and both tickets announced to the app's receiver.
 */
import { startStack, type TestStack } from '../../stack'
import { runExample } from './run-example'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('example_tickets', { allowLoopbackWebhooks: true })
})
afterAll(async () => {
  await stack?.stop()
})

test('npm run example:tickets gives away a free ticket, idempotently, and sells two paid ones', async () => {
  const stdout = await runExample(stack, 'example-tickets.ts')
  expect(stdout).toMatch(/3\. available: 2\n/)
  const id = /4\. the buyer claimed: ticket (ticket_[0-9a-f]{24}) issued/.exec(stdout)?.[1]
  expect(id).toBeDefined()
  expect(stdout).toContain(`5. the same claim again (same key, same assertion): ticket ${id} issued`)
  expect(stdout).toMatch(/6\. available: 1\n/)
  expect(await stack.tickets.Ticket.countDocuments({ _id: id })).toBe(1)
  const page = /4\. .*; the buyer's page with its QR code: (\S+)\n/.exec(stdout)?.[1]
  expect(page).toBe(`${stack.checkoutUrl}/checkout/${(await stack.tickets.Ticket.findById(id).lean())!.pageToken}`)

  const holdId = /9\. hold (hold_[0-9a-f]{24}) until /.exec(stdout)?.[1]
  expect(holdId).toBeDefined()
  expect(stdout).toMatch(/10\. the buyer paid on the checkout page \(303\); front row available: 0\n/)
  const sold = await stack.tickets.Ticket.find({ holdId }).lean()
  expect(sold).toHaveLength(2)
  expect(stdout).toContain(`11. the receiver got ticket.issued for 2 tickets of the hold: `)
  for (const t of sold) expect(stdout).toContain(t._id)
}, 180_000)
