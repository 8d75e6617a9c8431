/**
 * Checkout money, integers of minor units only:
 *
 *   serviceFee   = round-half-up(amount × bps / 10 000) + (flatCurrency = currency ? flatAmount × tickets : 0)
 *                  (tickets: 1 on a tip or shop checkout)                                              platform fee
 *   buyerFee     = passToBuyer ? serviceFee : 0                                                       added for the buyer
 *   total        = amount + buyerFee                                                                  what the buyer pays, at most MAX_TOTAL
 *   appFee       = round-half-up(amount × feeShareBps / 10 000), 0 when the app sells for itself       the app's share
 *   recipientNet = amount − appFee − (passToBuyer ? 0 : serviceFee)                                   never below 0
 */
import { MAX_AMOUNT } from '@svc/checkout-product'
import { ContractError } from '@svc/errors'

/** The most one checkout charges, fees included: twice the largest amount. */
export const MAX_TOTAL = 2 * MAX_AMOUNT

export interface ServiceFeeRate {
  bps: number
  flatAmount: number
  flatCurrency: string
  passToBuyer: boolean
}

export interface Charges {
  amount: number
  serviceFee: number
  buyerFee: number
  total: number
  appFee: number
  recipientNet: number
}

/** round-half-up(value × bps / 10 000) for non-negative integers, exact (no floating point division). */
export function basisPoints(value: number, bps: number): number {
  const product = value * bps
  return Math.floor((product + 5000) / 10000)
}

function check(cond: boolean, message: string): void {
  if (!cond) throw new ContractError('InvalidRequest', message)
}

const isBps = (n: number) => Number.isInteger(n) && n >= 0 && n <= 10000

/** `tickets`: how many tickets a ticket checkout sells; the flat fee is per ticket (1 for every other checkout). */
export function computeCharges(input: { amount: number; currency: string; serviceFee: ServiceFeeRate; feeShareBps: number; selfSale: boolean; tickets?: number }): Charges {
  const { amount, currency, serviceFee: rate } = input
  const tickets = input.tickets ?? 1
  // basisPoints is exact while amount × 10 000 stays a safe integer: the product's limit, checked here too
  check(Number.isSafeInteger(amount) && amount > 0 && amount <= MAX_AMOUNT, `amount must be an integer of minor units from 1 to ${MAX_AMOUNT}`)
  check(isBps(rate.bps), 'serviceFee.bps must be an integer 0-10000')
  check(Number.isSafeInteger(rate.flatAmount) && rate.flatAmount >= 0, 'serviceFee.flatAmount must be a non-negative integer')
  check(isBps(input.feeShareBps), 'feeShareBps must be an integer 0-10000')
  check(Number.isSafeInteger(tickets) && tickets >= 1, 'tickets must be a positive integer')
  const serviceFee = basisPoints(amount, rate.bps) + (rate.flatCurrency === currency ? rate.flatAmount * tickets : 0)
  const buyerFee = rate.passToBuyer ? serviceFee : 0
  const total = amount + buyerFee
  const appFee = input.selfSale ? 0 : basisPoints(amount, input.feeShareBps)
  const recipientNet = amount - appFee - (rate.passToBuyer ? 0 : serviceFee)
  // a buyer fee may at most double the amount by its rate; only flat fees (per ticket) could take the total past it
  if (total > MAX_TOTAL) throw new ContractError('InvalidProduct', `the total with fees, ${total} ${currency}, is more than one checkout may charge (${MAX_TOTAL})`)
  if (recipientNet < 0) {
    throw new ContractError('InvalidProduct', `amount too small to cover fees: ${amount} ${currency} is less than the fees of ${appFee + (rate.passToBuyer ? 0 : serviceFee)}`)
  }
  return { amount, serviceFee, buyerFee, total, appFee, recipientNet }
}
