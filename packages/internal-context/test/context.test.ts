import { createHmac } from 'node:crypto'
import { signContext, verifyContext, type Principal } from '../src'

const SECRET = 'a'.repeat(48)
const NOW = Date.UTC(2026, 0, 15, 12, 0, 0)
const principal: Principal = { kind: 'app', appDid: 'did:key:zExample' }

/** Signs an arbitrary body exactly as signContext does, to reach the checks behind the signature. */
function signRaw(body: string, secret = SECRET): string {
  const b = Buffer.from(body).toString('base64url')
  return `${b}.${createHmac('sha256', secret).update(b).digest('base64url')}`
}

describe('round trip', () => {
  test.each<Principal>([
    { kind: 'app', appDid: 'did:key:zExample' },
    { kind: 'apiKey', keyHash: 'f'.repeat(64) },
    { kind: 'service', name: 'xrpc-adapter' },
    { kind: 'operator', id: 'alice' },
    { kind: 'gateway' },
  ])('%o', (p) => {
    const header = signContext(SECRET, { principal: p, requestId: 'req-1' }, NOW)
    expect(verifyContext(SECRET, header, NOW)).toEqual({
      ok: true,
      context: { principal: p, requestId: 'req-1', exp: Math.floor(NOW / 1000) + 60 },
    })
  })

  test('the header is base64url(JSON).base64url(HMAC-SHA256)', () => {
    const header = signContext(SECRET, { principal, requestId: 'r' }, NOW)
    const [body, sig] = header.split('.')
    expect(header.split('.')).toHaveLength(2)
    expect(JSON.parse(Buffer.from(body!, 'base64url').toString())).toEqual({ principal, requestId: 'r', exp: Math.floor(NOW / 1000) + 60 })
    expect(sig).toBe(createHmac('sha256', SECRET).update(body!).digest('base64url'))
  })
})

describe('tampering', () => {
  const header = signContext(SECRET, { principal, requestId: 'req-1' }, NOW)
  const [body, sig] = header.split('.') as [string, string]

  test('another secret → bad-signature', () => {
    expect(verifyContext('b'.repeat(48), header, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  test('a body changed to another principal, old signature → bad-signature', () => {
    const forged = Buffer.from(JSON.stringify({ principal: { kind: 'operator', id: 'x' }, requestId: 'req-1', exp: Math.floor(NOW / 1000) + 60 })).toString('base64url')
    expect(verifyContext(SECRET, `${forged}.${sig}`, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  test('one character of the body changed → bad-signature', () => {
    const flipped = (body[5] === 'A' ? 'B' : 'A')
    expect(verifyContext(SECRET, `${body.slice(0, 5)}${flipped}${body.slice(6)}.${sig}`, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  test('one character of the signature changed → bad-signature', () => {
    const flipped = (sig[3] === 'A' ? 'B' : 'A')
    expect(verifyContext(SECRET, `${body}.${sig.slice(0, 3)}${flipped}${sig.slice(4)}`, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  test('a truncated or extended signature → bad-signature', () => {
    expect(verifyContext(SECRET, `${body}.${sig.slice(0, -4)}`, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
    expect(verifyContext(SECRET, `${body}.${sig}AAAA`, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  test('the signature of another context → bad-signature', () => {
    const other = signContext(SECRET, { principal: { kind: 'operator', id: 'x' }, requestId: 'req-2' }, NOW)
    expect(verifyContext(SECRET, `${body}.${other.split('.')[1]}`, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })
})

describe('expiry (60 s)', () => {
  const header = signContext(SECRET, { principal, requestId: 'r' }, NOW)

  test('still valid at the last second', () => {
    expect(verifyContext(SECRET, header, NOW + 60_000).ok).toBe(true)
  })

  test('expired after it', () => {
    expect(verifyContext(SECRET, header, NOW + 61_000)).toEqual({ ok: false, reason: 'expired' })
  })

  test('signed far in the past', () => {
    const old = signContext(SECRET, { principal, requestId: 'r' }, NOW - 24 * 3600_000)
    expect(verifyContext(SECRET, old, NOW)).toEqual({ ok: false, reason: 'expired' })
  })

  test('a signed payload without a numeric exp', () => {
    expect(verifyContext(SECRET, signRaw(JSON.stringify({ principal, requestId: 'r' })), NOW)).toEqual({ ok: false, reason: 'expired' })
    expect(verifyContext(SECRET, signRaw(JSON.stringify({ principal, requestId: 'r', exp: '9999999999' })), NOW)).toEqual({ ok: false, reason: 'expired' })
  })
})

describe('missing and malformed', () => {
  test('missing', () => {
    expect(verifyContext(SECRET, undefined, NOW)).toEqual({ ok: false, reason: 'missing' })
    expect(verifyContext(SECRET, '', NOW)).toEqual({ ok: false, reason: 'missing' })
  })

  test.each([
    ['no dot', 'abcdef'],
    ['three parts', 'a.b.c'],
    ['empty body', '.abc'],
    ['empty signature', 'abc.'],
    ['just a dot', '.'],
  ])('%s → malformed', (_label, header) => {
    expect(verifyContext(SECRET, header, NOW)).toEqual({ ok: false, reason: 'malformed' })
  })

  test('garbage with a dot → bad-signature (the signature is checked before the body is read)', () => {
    expect(verifyContext(SECRET, 'not json.at all', NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  const exp = Math.floor(NOW / 1000) + 60
  test.each([
    ['a body that is not JSON', '{not json'],
    ['JSON null', 'null'],
    ['a JSON number', '42'],
    ['a JSON array', '[]'],
    ['no principal', JSON.stringify({ requestId: 'r', exp })],
    ['no requestId', JSON.stringify({ principal, exp })],
    ['a numeric requestId', JSON.stringify({ principal, requestId: 7, exp })],
  ])('correctly signed, but %s → malformed', (_label, raw) => {
    expect(verifyContext(SECRET, signRaw(raw), NOW)).toEqual({ ok: false, reason: 'malformed' })
  })
})
