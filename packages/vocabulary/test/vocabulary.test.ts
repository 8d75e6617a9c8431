import { ContractError } from '@svc/errors'
import { graphemeLength, hasControlCharacters, isCurrencyCode, isDid, isEnvironment, isWithinBounds, parseEnvironment, parseRecordUri, recordUri } from '../src'

describe('environment', () => {
  it('accepts test and live only', () => {
    expect(parseEnvironment('test')).toBe('test')
    expect(parseEnvironment('live')).toBe('live')
    for (const bad of ['Test', 'prod', '', null, undefined, 1]) {
      expect(isEnvironment(bad)).toBe(false)
      expect(() => parseEnvironment(bad)).toThrow(ContractError)
    }
  })
})

describe('DIDs (AT Protocol syntax)', () => {
  it.each(['did:plc:ewvi7nxzyoun6zhxrhs64oiz', 'did:web:example.com', 'did:key:zQ3shokFTS3brHcDQrn82RUDfCZESWL1ZdCEJwekUDPQiYBme', 'did:web:localhost%3A3000'])('accepts %s', (did) => {
    expect(isDid(did)).toBe(true)
  })
  it.each(['did:plc:', 'did:PLC:abc', 'did:plc:abc:', 'did:plc:abc%', 'plc:abc', 'did:plc:a b', `did:plc:${'a'.repeat(2100)}`, 42])('refuses %s', (did) => {
    expect(isDid(did)).toBe(false)
  })
})

describe('record AT-URIs', () => {
  it('parses at://<did>/<nsid>/<rkey>', () => {
    const uri = recordUri('did:plc:ewvi7nxzyoun6zhxrhs64oiz', 'money.svc.payment.record', '3jzfcijpj2z2a')
    expect(parseRecordUri(uri)).toEqual({ repo: 'did:plc:ewvi7nxzyoun6zhxrhs64oiz', collection: 'money.svc.payment.record', rkey: '3jzfcijpj2z2a' })
  })
  it.each([
    'at://alice.example.com/app.bsky.feed.post/3jzfcijpj2z2a',
    'at://did:plc:abc',
    'at://did:plc:abc/app.bsky.feed.post',
    'at://did:plc:abc/notansid/3jz',
    'at://did:plc:abc/app.bsky.feed.post/..',
    'at://did:plc:abc/app.bsky.feed.post/3jz?x=1',
    'https://example.com/x/y',
    '',
    null,
  ])('refuses %s', (uri) => {
    expect(parseRecordUri(uri)).toBeNull()
  })
})

describe('bounded text', () => {
  it('counts graphemes, not code units', () => {
    expect(graphemeLength('🎉🎉')).toBe(2)
    expect(graphemeLength('👩‍👩‍👧')).toBe(1)
    expect(isWithinBounds('🎉'.repeat(10), { maxGraphemes: 10, maxBytes: 40 })).toBe(true)
    expect(isWithinBounds('🎉'.repeat(10), { maxGraphemes: 10, maxBytes: 39 })).toBe(false)
    expect(isWithinBounds('🎉'.repeat(11), { maxGraphemes: 10, maxBytes: 100 })).toBe(false)
  })
  it('finds control characters', () => {
    expect(hasControlCharacters('a\u0000b')).toBe(true)
    expect(hasControlCharacters('a\u009fb')).toBe(true)
    expect(hasControlCharacters('plain text, é')).toBe(false)
    // bidirectional overrides and isolates, which reorder what a buyer sees
    expect(hasControlCharacters('Donation \u202e00.1$ :latoT')).toBe(true)
    expect(hasControlCharacters('a\u2066b\u2069')).toBe(true)
    // right-to-left text and its marks stay allowed
    expect(hasControlCharacters('\u05e9\u05dc\u05d5\u05dd\u200f 5')).toBe(false)
  })
})

test('currencies: lowercase ISO 4217 codes in use', () => {
  for (const code of ['usd', 'eur', 'jpy', 'kwd', 'gbp']) expect(isCurrencyCode(code)).toBe(true)
  for (const value of ['USD', 'abc', 'us', 'usdt', '840', 840, null, 'toString', 'constructor']) expect(isCurrencyCode(value)).toBe(false)
  // units of account and withdrawn currencies, which ICU lists: no checkout can be paid in them
  for (const code of ['xdr', 'xsu', 'ang', 'bgn', 'hrk', 'cuc', 'sll', 'zwl']) expect(isCurrencyCode(code)).toBe(false)
  // their successors, and the zero- and three-decimal ones
  for (const code of ['sle', 'zwg', 'xcg', 'xof', 'vnd', 'bhd']) expect(isCurrencyCode(code)).toBe(true)
})

test('currencies: the fixed list is ICU\'s (this Node) less the codes left out, so display digits are known for each', () => {
  const icu = Intl.supportedValuesOf('currency').map((c) => c.toLowerCase())
  for (const code of icu) expect([code, isCurrencyCode(code)]).toEqual([code, !['xdr', 'xsu', 'ang', 'bgn', 'hrk', 'cuc', 'sll', 'zwl'].includes(code)])
})
