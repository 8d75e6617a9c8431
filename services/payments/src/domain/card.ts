/**
 * The card form, checked before anything is claimed: a refusal is InvalidRequest with a message for the buyer, and
 * the checkout stays payable. Messages never repeat the number or the CVC.
 */
import { ContractError } from '@svc/errors'
import type { Card } from '../processors'
import { hasControlCharacters } from '@svc/vocabulary'
import type { CardInput } from '../generated/graph-types'

export type { CardInput }

export function luhnValid(digits: string): boolean {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48
    if (i % 2 === 1) {
      d *= 2
      if (d > 9) d -= 9
    }
    sum += d
  }
  return sum % 10 === 0
}

const refuse = (message: string): never => {
  throw new ContractError('InvalidRequest', message)
}

/** The card in processor form (digits only, four-digit year), or InvalidRequest. A card is valid through its expiry month. */
export function validateCard(input: CardInput, now: Date): Card {
  const number = String(input.number ?? '').replace(/[\s-]/g, '')
  if (!/^\d{12,19}$/.test(number)) refuse('Your card number is incomplete or not a card number.')
  if (!luhnValid(number)) refuse('Your card number is invalid.')
  const month = input.expMonth
  if (!Number.isInteger(month) || month < 1 || month > 12) refuse("Your card's expiration month is invalid.")
  let year = input.expYear
  if (Number.isInteger(year) && year >= 0 && year < 100) year += 2000
  if (!Number.isInteger(year) || year < 2000 || year > 2100) refuse("Your card's expiration year is invalid.")
  const thisYear = now.getUTCFullYear()
  const thisMonth = now.getUTCMonth() + 1
  if (year < thisYear || (year === thisYear && month < thisMonth)) refuse('Your card has expired.')
  if (year > thisYear + 50) refuse("Your card's expiration year is invalid.")
  const cvc = String(input.cvc ?? '').trim()
  if (!/^\d{3,4}$/.test(cvc)) refuse("Your card's security code (CVC) is invalid.")
  let name: string | null = null
  if (input.name !== undefined && input.name !== null) {
    const trimmed = input.name.trim()
    if (trimmed.length > 200 || hasControlCharacters(trimmed)) refuse('The name on the card is invalid.')
    name = trimmed || null
  }
  return { number, expMonth: month, expYear: year, cvc, name }
}
