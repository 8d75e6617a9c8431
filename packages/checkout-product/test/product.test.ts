/**
 * The product envelope: round trips for every payment type, and one refusal per rule, from both sides
 * (encodeProduct throws InvalidProductError, parseProduct answers { ok: false } and never throws).
 */
import {
  encodeProduct,
  InvalidProductError,
  MAX_PRODUCT_LENGTH,
  parseProduct,
  PRODUCT_PREFIX,
  checkoutProductSchema,
  type CheckoutProduct,
  type ProductFailureCode,
} from '../src'

const TIP: CheckoutProduct = {
  recipientDid: 'did:plc:abcdefghijklmnopqrstuvwx',
  paymentType: 'tip',
  amount: 500,
  currency: 'usd',
  appOrderId: 'order-2026.06:0001_x',
  description: 'A tip for the stream ☕',
  returnUrl: 'https://app.example.com/thanks?order=1',
  cancelUrl: 'http://localhost:3000/cancel',
}

/** Encodes any JSON value as an envelope, bypassing validation (what a hand-made or hostile client could send). */
const raw = (value: unknown) => PRODUCT_PREFIX + Buffer.from(JSON.stringify(value)).toString('base64url')

function expectRefused(value: unknown, code: ProductFailureCode, reason?: RegExp) {
  const result = parseProduct(value)
  expect(result.ok).toBe(false)
  if (result.ok) return
  expect(result.code).toBe(code)
  if (reason) expect(result.reason).toMatch(reason)
}

/** A field rule: encodeProduct throws and parseProduct of the raw envelope refuses, both naming the rule. */
function expectFieldRefused(fields: Record<string, unknown>, reason: RegExp) {
  let thrown: unknown
  try {
    encodeProduct(fields as unknown as CheckoutProduct)
  } catch (err) {
    thrown = err
  }
  expect(thrown).toBeInstanceOf(InvalidProductError)
  expect((thrown as InvalidProductError).code).toBe('InvalidFields')
  expect((thrown as InvalidProductError).reason).toMatch(reason)
  expectRefused(raw(fields), 'InvalidFields', reason)
}

describe('round trip', () => {
  it.each<[string, CheckoutProduct]>([
    ['tip', TIP],
    ['shop', { ...TIP, paymentType: 'shop', amount: 100_000_000, currency: 'eur' }],
    ['subscription', { ...TIP, paymentType: 'subscription', cadence: 'month' }],
    ['subscription yearly', { ...TIP, paymentType: 'subscription', cadence: 'year', amount: 1 }],
    ['ticket', { ...TIP, paymentType: 'ticket', holdId: 'hold_01HZX3' }],
    ['did:web recipient', { ...TIP, recipientDid: 'did:web:creator.example.com' }],
    ['test environment', { ...TIP, environment: 'test' }],
    ['live environment', { ...TIP, environment: 'live' }],
    ['subscription in live', { ...TIP, paymentType: 'subscription', cadence: 'month', environment: 'live' }],
    ['ticket in test', { ...TIP, paymentType: 'ticket', holdId: 'hold_1', environment: 'test' }],
  ])('%s: parse(encode(fields)) gives the fields back', (_name, fields) => {
    const product = encodeProduct(fields)
    expect(product.startsWith(PRODUCT_PREFIX)).toBe(true)
    expect(product.slice(PRODUCT_PREFIX.length)).toMatch(/^[A-Za-z0-9_-]+$/)
    expect(parseProduct(product)).toEqual({ ok: true, product: fields })
  })

  it('the envelope is base64url of the JSON, no padding, in one fixed key order', () => {
    const reordered = Object.fromEntries(Object.entries(TIP).reverse()) as CheckoutProduct
    const product = encodeProduct(reordered)
    expect(product).toBe(encodeProduct(TIP))
    expect(JSON.parse(Buffer.from(product.slice(PRODUCT_PREFIX.length), 'base64url').toString('utf8'))).toEqual(TIP)
    expect(Object.keys(JSON.parse(Buffer.from(product.slice(PRODUCT_PREFIX.length), 'base64url').toString()))).toEqual([
      'recipientDid',
      'paymentType',
      'amount',
      'currency',
      'appOrderId',
      'description',
      'returnUrl',
      'cancelUrl',
    ])
    expect(product).not.toContain('=')
  })

  it('environment comes after cancelUrl and before cadence / holdId in the fixed key order', () => {
    const keysOf = (product: string) => Object.keys(JSON.parse(Buffer.from(product.slice(PRODUCT_PREFIX.length), 'base64url').toString()))
    const sub = { ...TIP, paymentType: 'subscription', cadence: 'year', environment: 'live' } as CheckoutProduct
    const reordered = Object.fromEntries(Object.entries(sub).reverse()) as CheckoutProduct
    expect(encodeProduct(reordered)).toBe(encodeProduct(sub))
    expect(keysOf(encodeProduct(sub)).slice(-3)).toEqual(['cancelUrl', 'environment', 'cadence'])
    const ticket = { ...TIP, paymentType: 'ticket', holdId: 'hold_1', environment: 'test' } as CheckoutProduct
    expect(keysOf(encodeProduct(ticket)).slice(-3)).toEqual(['cancelUrl', 'environment', 'holdId'])
    expect(keysOf(encodeProduct(TIP))).not.toContain('environment')
  })

  it('naming the environment changes the product string (absent and test are different strings)', () => {
    expect(encodeProduct({ ...TIP, environment: 'test' })).not.toBe(encodeProduct(TIP))
    expect(encodeProduct({ ...TIP, environment: 'test' })).not.toBe(encodeProduct({ ...TIP, environment: 'live' }))
  })

  it('a hand-made envelope with the same fields in another key order parses too', () => {
    const reordered = Object.fromEntries(Object.entries(TIP).reverse())
    expect(parseProduct(raw(reordered))).toEqual({ ok: true, product: TIP })
  })

  it('exports the zod schema', () => {
    expect(checkoutProductSchema.safeParse(TIP).success).toBe(true)
    expect(checkoutProductSchema.safeParse({ ...TIP, amount: 0 }).success).toBe(false)
  })
})

describe('envelope refusals (parseProduct never throws)', () => {
  it.each<[string, unknown, ProductFailureCode]>([
    ['not a string', 42, 'NotString'],
    ['undefined', undefined, 'NotString'],
    ['missing prefix', Buffer.from(JSON.stringify(TIP)).toString('base64url'), 'MissingPrefix'],
    ['other version', 'svc.checkout.v2:' + Buffer.from(JSON.stringify(TIP)).toString('base64url'), 'MissingPrefix'],
    ['prefix in other case', 'SVC.checkout.v1:' + Buffer.from(JSON.stringify(TIP)).toString('base64url'), 'MissingPrefix'],
    ['empty envelope', PRODUCT_PREFIX, 'BadEncoding'],
    ['padding', PRODUCT_PREFIX + Buffer.from('{"a":1}').toString('base64'), 'BadEncoding'],
    ['standard base64 alphabet', PRODUCT_PREFIX + '+/+/', 'BadEncoding'],
    ['whitespace', PRODUCT_PREFIX + ' ' + Buffer.from(JSON.stringify(TIP)).toString('base64url'), 'BadEncoding'],
    ['impossible length', PRODUCT_PREFIX + 'abcde', 'BadEncoding'],
    ['non-canonical trailing bits', PRODUCT_PREFIX + 'e31', 'BadEncoding'],
    ['not UTF-8', PRODUCT_PREFIX + Buffer.from([0x7b, 0xff, 0x7d]).toString('base64url'), 'BadEncoding'],
    ['not JSON', PRODUCT_PREFIX + Buffer.from('recipientDid=did:plc:x').toString('base64url'), 'NotJson'],
    ['JSON array', raw([TIP]), 'NotObject'],
    ['JSON null', raw(null), 'NotObject'],
    ['JSON string', raw('tip'), 'NotObject'],
  ])('%s → %s', (_name, value, code) => {
    expectRefused(value, code)
  })

  it('the canonical encoding of `{}` is accepted as base64url and then refused for its fields', () => {
    expect(raw({})).toBe(PRODUCT_PREFIX + 'e30')
    expectRefused(PRODUCT_PREFIX + 'e30', 'InvalidFields', /recipientDid is required/)
    expectRefused(PRODUCT_PREFIX + 'e31', 'BadEncoding', /canonical/)
  })

  it(`an envelope over ${MAX_PRODUCT_LENGTH} characters is TooLong (checked before decoding)`, () => {
    expectRefused(PRODUCT_PREFIX + 'A'.repeat(MAX_PRODUCT_LENGTH), 'TooLong')
    expectRefused('x'.repeat(MAX_PRODUCT_LENGTH + 1), 'TooLong')
  })

  it('encodeProduct refuses fields whose envelope would exceed the limit', () => {
    // 4 URLs of ~1000 characters each: every field valid, the whole too long
    const long = 'https://app.example.com/' + 'a'.repeat(1000)
    expect(() => encodeProduct({ ...TIP, returnUrl: long + '1', cancelUrl: long + '2', description: 'é'.repeat(500) })).toThrow(
      expect.objectContaining({ code: 'TooLong' }),
    )
  })

  it('an envelope exactly at the limit is not refused for its length', () => {
    const base = encodeProduct(TIP)
    const padded = { ...TIP, description: TIP.description + 'x'.repeat(200) }
    expect(encodeProduct(padded).length).toBeGreaterThan(base.length)
    expect(encodeProduct(padded).length).toBeLessThanOrEqual(MAX_PRODUCT_LENGTH)
  })
})

describe('field refusals (encodeProduct throws, parseProduct refuses)', () => {
  it('unknown fields', () => {
    expectFieldRefused({ ...TIP, buyerDid: 'did:plc:x' }, /unknown field\(s\): buyerDid/)
    expectFieldRefused({ ...TIP, __proto__x: 1 }, /unknown field/)
    expectRefused(PRODUCT_PREFIX + Buffer.from(JSON.stringify(TIP).replace('{', '{"__proto__":{"amount":1},')).toString('base64url'), 'InvalidFields', /unknown field/)
  })

  it.each(['recipientDid', 'paymentType', 'amount', 'currency', 'appOrderId', 'description', 'returnUrl', 'cancelUrl'])(
    'missing %s',
    (field) => {
      const fields: Record<string, unknown> = { ...TIP }
      delete fields[field]
      expectFieldRefused(fields, new RegExp(`${field} is required`))
    },
  )

  it.each<[string, unknown]>([
    ['not a DID', 'alice.example.com'],
    ['method uppercase', 'did:PLC:abc'],
    ['empty identifier', 'did:plc:'],
    ['trailing colon', 'did:web:example.com:'],
    ['number', 12],
  ])('recipientDid %s', (_name, value) => {
    expectFieldRefused({ ...TIP, recipientDid: value }, /recipientDid/)
  })

  it.each<[string, unknown]>([
    ['unknown type', 'donation'],
    ['case', 'Tip'],
    ['number', 1],
  ])('paymentType %s', (_name, value) => {
    expectFieldRefused({ ...TIP, paymentType: value }, /paymentType must be one of tip, shop, subscription, ticket/)
  })

  it.each<[string, unknown, RegExp]>([
    ['zero', 0, /at least 1/],
    ['negative', -5, /at least 1/],
    ['above the maximum', 100_000_001, /at most 100000000/],
    ['fractional', 10.5, /integer/],
    ['a string', '500', /amount/],
    ['NaN-like null', null, /amount/],
  ])('amount %s', (_name, value, reason) => {
    expectFieldRefused({ ...TIP, amount: value }, reason)
  })

  it.each<[string, unknown]>([
    ['uppercase', 'USD'],
    ['two letters', 'us'],
    ['four letters', 'usdt'],
    ['digits', '840'],
    ['number', 840],
    ['three letters that are no currency', 'abc'],
  ])('currency %s', (_name, value) => {
    expectFieldRefused({ ...TIP, currency: value }, /currency/)
  })

  it.each<[string, unknown]>([
    ['empty', ''],
    ['too long', 'a'.repeat(129)],
    ['space', 'order 1'],
    ['slash', 'order/1'],
    ['non-ASCII', 'ordré'],
    ['number', 1],
  ])('appOrderId %s', (_name, value) => {
    expectFieldRefused({ ...TIP, appOrderId: value }, /appOrderId/)
  })

  it('appOrderId of exactly 128 characters is accepted', () => {
    expect(() => encodeProduct({ ...TIP, appOrderId: 'a'.repeat(128) })).not.toThrow()
  })

  it.each<[string, unknown, RegExp]>([
    ['empty', '', /description must be 1-500 characters/],
    ['too long', 'x'.repeat(501), /description must be 1-500 characters/],
    ['blank', '   ', /description must not be blank/],
    ['control character', 'a\u0000b', /control characters/],
    ['newline', 'line\nbreak', /control characters/],
    ['right-to-left override', 'Donation \u202e00.1$ :latoT', /control characters/],
    ['number', 5, /description/],
  ])('description %s', (_name, value, reason) => {
    expectFieldRefused({ ...TIP, description: value }, reason)
  })

  it('description of 500 characters (counted as code points) is accepted', () => {
    expect(() => encodeProduct({ ...TIP, description: '😀'.repeat(500) })).not.toThrow()
  })

  it.each<[string, unknown]>([
    ['relative', '/thanks'],
    ['no scheme', 'app.example.com/thanks'],
    ['javascript:', 'javascript:alert(1)'],
    ['ftp', 'ftp://app.example.com/'],
    ['data:', 'data:text/html,hi'],
    ['credentials', 'https://user:pw@app.example.com/'],
    ['leading space', ' https://app.example.com/'],
    ['too long', 'https://app.example.com/' + 'a'.repeat(2048)],
    ['too long once percent-encoded', 'https://app.example.com/' + '€'.repeat(300)],
    ['number', 1],
  ])('returnUrl and cancelUrl %s', (_name, value) => {
    expectFieldRefused({ ...TIP, returnUrl: value }, /returnUrl/)
    expectFieldRefused({ ...TIP, cancelUrl: value }, /cancelUrl/)
  })

  it('cadence is required iff paymentType is subscription', () => {
    expectFieldRefused({ ...TIP, paymentType: 'subscription' }, /cadence is required when paymentType is subscription/)
    expectFieldRefused({ ...TIP, cadence: 'month' }, /cadence is only allowed when paymentType is subscription/)
    expectFieldRefused({ ...TIP, paymentType: 'ticket', holdId: 'hold_1', cadence: 'year' }, /cadence is only allowed/)
    expectFieldRefused({ ...TIP, paymentType: 'subscription', cadence: 'week' }, /cadence must be one of month, year/)
    expectFieldRefused({ ...TIP, paymentType: 'subscription', cadence: 'Month' }, /cadence must be one of month, year/)
  })

  it('holdId is required iff paymentType is ticket, with the hold_ prefix', () => {
    expectFieldRefused({ ...TIP, paymentType: 'ticket' }, /holdId is required when paymentType is ticket/)
    expectFieldRefused({ ...TIP, holdId: 'hold_1' }, /holdId is only allowed when paymentType is ticket/)
    expectFieldRefused({ ...TIP, paymentType: 'subscription', cadence: 'month', holdId: 'hold_1' }, /holdId is only allowed/)
    expectFieldRefused({ ...TIP, paymentType: 'ticket', holdId: '01HZX3' }, /holdId must be hold_/)
    expectFieldRefused({ ...TIP, paymentType: 'ticket', holdId: 'hold_' }, /holdId must be hold_/)
    expectFieldRefused({ ...TIP, paymentType: 'ticket', holdId: 'HOLD_1' }, /holdId must be hold_/)
  })

  it.each<[string, unknown]>([
    ['prod', 'prod'],
    ['uppercase', 'TEST'],
    ['padded', ' live'],
    ['empty', ''],
    ['a boolean', true],
    ['an array', ['test']],
    ['null', null],
  ])('environment %s', (_name, value) => {
    expectFieldRefused({ ...TIP, environment: value }, /environment must be one of test, live/)
  })

  it('null for an optional field is a wrong type, not an absent one', () => {
    expectFieldRefused({ ...TIP, cadence: null }, /cadence/)
    expectFieldRefused({ ...TIP, paymentType: 'ticket', holdId: null }, /holdId/)
  })

  it('several broken rules are all named in the reason', () => {
    const result = parseProduct(raw({ ...TIP, amount: 0, currency: 'USD' }))
    expect(result).toEqual({ ok: false, code: 'InvalidFields', reason: expect.stringMatching(/amount.*currency/) })
  })
})
