/** Pure rules: the fee math, the card form, the token forms. No database (the test processor's tests are in settlement.test.ts). */
import { ContractError } from '@svc/errors'
import { basisPoints, BROWSER_TOKEN_RE, computeCharges, deriveToken, hashToken, luhnValid, STATUS_TOKEN_RE, TEST_CARDS, validateCard } from '../src'

const RATE = { bps: 250, flatAmount: 30, flatCurrency: 'usd', passToBuyer: false }

describe('fees', () => {
  test('basis points round half up, exactly', () => {
    expect(basisPoints(1000, 250)).toBe(25)
    expect(basisPoints(1, 5000)).toBe(1) // 0.5 → 1
    expect(basisPoints(1, 4999)).toBe(0) // 0.4999 → 0
    expect(basisPoints(3, 5000)).toBe(2) // 1.5 → 2
    expect(basisPoints(199, 250)).toBe(5) // 4.975 → 5
    expect(basisPoints(180, 250)).toBe(5) // 4.5 → 5
    expect(basisPoints(100_000_000, 10000)).toBe(100_000_000)
    expect(basisPoints(12345, 0)).toBe(0)
  })

  test('service fee not passed on: the buyer pays the amount; the recipient bears the fees', () => {
    expect(computeCharges({ amount: 1000, currency: 'usd', serviceFee: RATE, feeShareBps: 500, selfSale: false })).toEqual({
      amount: 1000,
      serviceFee: 55, // 25 + 30
      buyerFee: 0,
      total: 1000,
      appFee: 50,
      recipientNet: 895,
    })
  })

  test('service fee passed to the buyer: added to the total, not taken from the recipient', () => {
    expect(computeCharges({ amount: 1000, currency: 'usd', serviceFee: { ...RATE, passToBuyer: true }, feeShareBps: 500, selfSale: false })).toEqual({
      amount: 1000,
      serviceFee: 55,
      buyerFee: 55,
      total: 1055,
      appFee: 50,
      recipientNet: 950,
    })
  })

  test('the flat part applies only in its own currency', () => {
    expect(computeCharges({ amount: 1000, currency: 'eur', serviceFee: RATE, feeShareBps: 0, selfSale: false }).serviceFee).toBe(25)
  })

  test('a total past what one checkout charges (flat fees per ticket passed to the buyer) is InvalidProduct; a full-rate buyer fee on the largest amount is not', () => {
    const flat = { bps: 0, flatAmount: 10_000_000, flatCurrency: 'usd', passToBuyer: true }
    let err: unknown
    try {
      computeCharges({ amount: 100_000_000, currency: 'usd', serviceFee: flat, feeShareBps: 0, selfSale: false, tickets: 2000 })
    } catch (e) {
      err = e
    }
    expect((err as ContractError).code).toBe('InvalidProduct')
    expect((err as ContractError).message).toMatch(/more than one checkout may charge \(200000000\)/)
    expect(computeCharges({ amount: 100_000_000, currency: 'usd', serviceFee: { ...flat, bps: 10_000, flatAmount: 0 }, feeShareBps: 0, selfSale: false }).total).toBe(200_000_000)
  })

  test('an app selling for itself takes no app fee', () => {
    expect(computeCharges({ amount: 1000, currency: 'usd', serviceFee: RATE, feeShareBps: 500, selfSale: true })).toMatchObject({ appFee: 0, recipientNet: 945 })
  })

  test('fees above the amount: InvalidProduct "amount too small to cover fees"; exactly covering is accepted', () => {
    let err: unknown
    try {
      computeCharges({ amount: 20, currency: 'usd', serviceFee: RATE, feeShareBps: 0, selfSale: false })
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(ContractError)
    expect((err as ContractError).code).toBe('InvalidProduct')
    expect((err as ContractError).message).toMatch(/amount too small to cover fees/)
    expect(computeCharges({ amount: 31, currency: 'usd', serviceFee: RATE, feeShareBps: 0, selfSale: false }).recipientNet).toBe(0) // 1 + 30
    // passed to the buyer, the fee never makes the amount too small
    expect(computeCharges({ amount: 1, currency: 'usd', serviceFee: { ...RATE, passToBuyer: true }, feeShareBps: 0, selfSale: false })).toMatchObject({ total: 31, recipientNet: 1 })
  })

  test('every result is an integer', () => {
    for (let amount = 1; amount < 5000; amount += 37) {
      const c = computeCharges({ amount: amount + 100, currency: 'usd', serviceFee: { ...RATE, bps: 333, passToBuyer: amount % 2 === 0 }, feeShareBps: 777, selfSale: false })
      for (const v of Object.values(c)) expect(Number.isInteger(v)).toBe(true)
      expect(c.total).toBe(c.amount + c.buyerFee)
    }
  })

  test('an amount past the product\'s limit is InvalidRequest (fees would lose precision past 2^53 / 10 000)', () => {
    const charge = (amount: number) => computeCharges({ amount, currency: 'usd', serviceFee: RATE, feeShareBps: 500, selfSale: false })
    expect(charge(100_000_000).amount).toBe(100_000_000)
    for (const amount of [100_000_001, 2 ** 50]) expect(() => charge(amount)).toThrow(expect.objectContaining({ code: 'InvalidRequest' }))
  })

  test.each<[string, Partial<typeof RATE>, number]>([
    ['bps above 10000', { bps: 10001 }, 0],
    ['fractional bps', { bps: 2.5 }, 0],
    ['negative flat amount', { flatAmount: -1 }, 0],
    ['feeShareBps above 10000', {}, 10001],
  ])('malformed rates are InvalidRequest: %s', (_name, over, feeShareBps) => {
    expect(() => computeCharges({ amount: 1000, currency: 'usd', serviceFee: { ...RATE, ...over }, feeShareBps, selfSale: false })).toThrow(
      expect.objectContaining({ code: 'InvalidRequest' }),
    )
  })
})

describe('card form', () => {
  const now = new Date(Date.UTC(2026, 5, 15))
  const card = { number: '4242 4242 4242 4242', expMonth: 12, expYear: 2027, cvc: '123', name: ' Bea Buyer ' }

  test('spaces and dashes are allowed; the result is digits only with a four-digit year', () => {
    expect(validateCard(card, now)).toEqual({ number: TEST_CARDS.succeeds, expMonth: 12, expYear: 2027, cvc: '123', name: 'Bea Buyer' })
    expect(validateCard({ ...card, number: '4242-4242-4242-4242', expYear: 27, name: null }, now)).toMatchObject({ number: TEST_CARDS.succeeds, expYear: 2027, name: null })
  })

  test('a card is valid through its expiry month', () => {
    expect(() => validateCard({ ...card, expMonth: 6, expYear: 2026 }, now)).not.toThrow()
  })

  test('Luhn', () => {
    expect(luhnValid(TEST_CARDS.succeeds)).toBe(true)
    expect(luhnValid(TEST_CARDS.declined)).toBe(true)
    expect(luhnValid('4242424242424241')).toBe(false)
  })

  test.each<[string, Partial<typeof card>, RegExp]>([
    ['letters', { number: '4242 abcd 4242 4242' }, /card number/],
    ['too short', { number: '4242' }, /card number/],
    ['not Luhn-valid', { number: '4242 4242 4242 4241' }, /card number is invalid/],
    ['month 13', { expMonth: 13 }, /expiration month/],
    ['month 0', { expMonth: 0 }, /expiration month/],
    ['expired last month', { expMonth: 5, expYear: 2026 }, /expired/],
    ['expired last year', { expYear: 2025 }, /expired/],
    ['a year far ahead', { expYear: 2099 }, /expiration year/],
    ['CVC of 2 digits', { cvc: '12' }, /security code/],
    ['CVC with letters', { cvc: '12a' }, /security code/],
    ['a control character in the name', { name: 'a\u0000b' }, /name/],
  ])('%s → InvalidRequest', (_name, over, message) => {
    let err: unknown
    try {
      validateCard({ ...card, ...over }, now)
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(ContractError)
    expect((err as ContractError).code).toBe('InvalidRequest')
    expect((err as ContractError).message).toMatch(message)
    expect((err as ContractError).message).not.toContain('4242')
  })
})

describe('token forms', () => {
  test('pst_ / cko_ + environment + 43 base64url characters, distinct per kind, stable per nonce', () => {
    const s = deriveToken('secret', 'status', 'test', 'chk_1', 'nonce')
    const b = deriveToken('secret', 'browser', 'test', 'chk_1', 'nonce')
    expect(s).toMatch(STATUS_TOKEN_RE)
    expect(b).toMatch(BROWSER_TOKEN_RE)
    expect(s).not.toMatch(BROWSER_TOKEN_RE)
    expect(b).not.toMatch(STATUS_TOKEN_RE)
    expect(s.slice(9)).not.toBe(b.slice(9))
    expect(deriveToken('secret', 'status', 'test', 'chk_1', 'nonce')).toBe(s)
    expect(deriveToken('other', 'status', 'test', 'chk_1', 'nonce')).not.toBe(s)
    expect(deriveToken('secret', 'status', 'live', 'chk_1', 'nonce')).toMatch(/^pst_live_/)
    expect(hashToken(s)).toMatch(/^[0-9a-f]{64}$/)
  })
})
