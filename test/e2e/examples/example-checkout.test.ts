/**
 * The README's payments walk-through is runnable: `npm run example:checkout -- --auto` (its own process, as a
 * developer runs it) against the whole stack in this process, playing the creator and the buyer by posting the
 * dashboard's and the checkout page's forms. It must end with a completed payment and its record.
 */
import { startStack, type TestStack } from '../../stack'
import { runExample } from './run-example'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('example_checkout')
})
afterAll(async () => {
  await stack?.stop()
})

test('npm run example:checkout -- --auto goes from the approval request to a completed payment', async () => {
  const stdout = await runExample(stack, 'example-checkout.ts', ['--auto'])
  expect(stdout).toMatch(/3\. approval request apr_\w+: pending/)
  expect(stdout).toContain('5. connection ready: approved, payment setup ready')
  expect(stdout).toMatch(/8\. payment completed: record at:\/\/did:web:svc\.test\/money\.svc\.payment\.record\/\w+/)
  const uri = /record (at:\/\/\S+)/.exec(stdout)![1]!
  expect(await stack.payments.PaymentRecord.countDocuments({ uri })).toBe(1)
}, 180_000)
