/** ContractError: a message that quotes a long input is cut in the middle, by code point. */
import { ContractError, MAX_ERROR_MESSAGE_LENGTH } from '../src'

it('keeps a message up to the limit as it is', () => {
  const message = 'm'.repeat(MAX_ERROR_MESSAGE_LENGTH)
  expect(new ContractError('InvalidRequest', message).message).toBe(message)
  expect(new ContractError('InvalidRequest').message).toBe('InvalidRequest')
})

it('cuts a longer one in the middle: its start and its end stay', () => {
  const message = new ContractError('InvalidRequest', `ticketTypeId ${'f'.repeat(50_000)} is not a tier of this event`).message
  expect(message.length).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_LENGTH)
  expect(message).toMatch(/^ticketTypeId f+ … f+ is not a tier of this event$/)
  expect(new ContractError('InvalidRequest', message).toBody().message).toBe(message)
})

it('never leaves half of a surrogate pair', () => {
  const message = new ContractError('InvalidRequest', `x${'😀'.repeat(2_000)}`).message
  expect(message).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/)
  expect(Array.from(message).length).toBeLessThanOrEqual(MAX_ERROR_MESSAGE_LENGTH)
})
