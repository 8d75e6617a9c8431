import { createHmac } from 'node:crypto'
import { signContext, verifyContext, type CallerKeys, type ContextSigner, type Principal } from '../src'

const KEYS: CallerKeys = { gateway: 'g'.repeat(48), 'xrpc-adapter': 'a'.repeat(48), events: 'e'.repeat(48), payments: 'p'.repeat(48), apps: 'q'.repeat(48), tickets: 't'.repeat(48) }
const SECRET = KEYS['xrpc-adapter']
const ADAPTER: ContextSigner = { issuer: 'xrpc-adapter', key: SECRET }
const NOW = Date.UTC(2026, 0, 15, 12, 0, 0)
const principal: Principal = { kind: 'app', appDid: 'did:key:zExample' }

/** Signs an arbitrary body exactly as signContext does, to reach the checks behind the signature. */
function signRaw(body: string, secret = SECRET, issuer = 'xrpc-adapter'): string {
  const signed = `${issuer}.${Buffer.from(body).toString('base64url')}`
  return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`
}

describe('round trip', () => {
  test.each<[ContextSigner['issuer'], Principal]>([
    ['xrpc-adapter', { kind: 'app', appDid: 'did:key:zExample' }],
    ['xrpc-adapter', { kind: 'apiKey', keyHash: 'f'.repeat(64) }],
    ['xrpc-adapter', { kind: 'service', name: 'xrpc-adapter' }],
    ['xrpc-adapter', { kind: 'service', name: 'checkout' }],
    ['xrpc-adapter', { kind: 'dashboard', actorDid: 'did:plc:abc', environment: 'test', sessionId: 's1' }],
    ['events', { kind: 'service', name: 'events' }],
    ['payments', { kind: 'service', name: 'payments' }],
    ['apps', { kind: 'service', name: 'apps' }],
    ['tickets', { kind: 'service', name: 'tickets' }],
    ['gateway', { kind: 'operator', id: 'alice' }],
    ['gateway', { kind: 'gateway' }],
  ])('%s signs %o', (issuer, p) => {
    const header = signContext({ issuer, key: KEYS[issuer] }, { principal: p, requestId: 'req-1' }, NOW)
    expect(verifyContext(KEYS, header, NOW)).toEqual({
      ok: true,
      context: { issuer, principal: p, requestId: 'req-1', exp: Math.floor(NOW / 1000) + 60 },
    })
  })

  test('the header is issuer.base64url(JSON).base64url(HMAC-SHA256 of issuer.body)', () => {
    const header = signContext(ADAPTER, { principal, requestId: 'r' }, NOW)
    const [issuer, body, sig] = header.split('.')
    expect(header.split('.')).toHaveLength(3)
    expect(issuer).toBe('xrpc-adapter')
    expect(JSON.parse(Buffer.from(body!, 'base64url').toString())).toEqual({ principal, requestId: 'r', exp: Math.floor(NOW / 1000) + 60 })
    expect(sig).toBe(createHmac('sha256', SECRET).update(`xrpc-adapter.${body}`).digest('base64url'))
  })
})

describe('each issuer states only its own principals', () => {
  test.each<[ContextSigner['issuer'], Principal]>([
    ['events', { kind: 'app', appDid: 'did:key:zExample' }],
    ['events', { kind: 'service', name: 'xrpc-adapter' }],
    ['payments', { kind: 'service', name: 'events' }],
    ['payments', { kind: 'operator', id: 'x' }],
    ['apps', { kind: 'dashboard', actorDid: 'did:plc:abc', environment: 'live', sessionId: 's' }],
    ['tickets', { kind: 'service', name: 'payments' }],
    ['tickets', { kind: 'app', appDid: 'did:key:zExample' }],
    ['xrpc-adapter', { kind: 'service', name: 'events' }],
    ['xrpc-adapter', { kind: 'operator', id: 'x' }],
    ['gateway', { kind: 'app', appDid: 'did:key:zExample' }],
  ])('%s claiming %o → not-allowed, and its own signContext refuses to sign it', (issuer, p) => {
    expect(() => signContext({ issuer, key: KEYS[issuer] }, { principal: p, requestId: 'r' }, NOW)).toThrow(/may not sign/)
    const raw = signRaw(JSON.stringify({ principal: p, requestId: 'r', exp: Math.floor(NOW / 1000) + 60 }), KEYS[issuer], issuer)
    expect(verifyContext(KEYS, raw, NOW)).toEqual({ ok: false, reason: 'not-allowed' })
  })

  test("an issuer's name with another issuer's key → bad-signature", () => {
    const raw = signRaw(JSON.stringify({ principal, requestId: 'r', exp: Math.floor(NOW / 1000) + 60 }), KEYS.events, 'xrpc-adapter')
    expect(verifyContext(KEYS, raw, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  test('an issuer that is not one of ours → unknown-issuer', () => {
    const raw = signRaw(JSON.stringify({ principal, requestId: 'r', exp: Math.floor(NOW / 1000) + 60 }), SECRET, 'someone')
    expect(verifyContext(KEYS, raw, NOW)).toEqual({ ok: false, reason: 'unknown-issuer' })
  })
})

describe('tampering', () => {
  const header = signContext(ADAPTER, { principal, requestId: 'req-1' }, NOW)
  const [, body, sig] = header.split('.') as [string, string, string]
  const P = 'xrpc-adapter.'

  test('another key → bad-signature', () => {
    expect(verifyContext({ ...KEYS, 'xrpc-adapter': 'b'.repeat(48) }, header, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  test('a body changed to another principal, old signature → bad-signature', () => {
    const forged = Buffer.from(JSON.stringify({ principal: { kind: 'operator', id: 'x' }, requestId: 'req-1', exp: Math.floor(NOW / 1000) + 60 })).toString('base64url')
    expect(verifyContext(KEYS, `${P}${forged}.${sig}`, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  test('one character of the body changed → bad-signature', () => {
    const flipped = (body[5] === 'A' ? 'B' : 'A')
    expect(verifyContext(KEYS, `${P}${body.slice(0, 5)}${flipped}${body.slice(6)}.${sig}`, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  test('one character of the signature changed → bad-signature', () => {
    const flipped = (sig[3] === 'A' ? 'B' : 'A')
    expect(verifyContext(KEYS, `${P}${body}.${sig.slice(0, 3)}${flipped}${sig.slice(4)}`, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  test('a truncated or extended signature → bad-signature', () => {
    expect(verifyContext(KEYS, `${P}${body}.${sig.slice(0, -4)}`, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
    expect(verifyContext(KEYS, `${P}${body}.${sig}AAAA`, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  test('the signature of another context → bad-signature', () => {
    const other = signContext(ADAPTER, { principal: { kind: 'service', name: 'checkout' }, requestId: 'req-2' }, NOW)
    expect(verifyContext(KEYS, `${P}${body}.${other.split('.')[2]}`, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })
})

describe('expiry (60 s)', () => {
  const header = signContext(ADAPTER, { principal, requestId: 'r' }, NOW)

  test('still valid at the last second', () => {
    expect(verifyContext(KEYS, header, NOW + 60_000).ok).toBe(true)
  })

  test('expired after it', () => {
    expect(verifyContext(KEYS, header, NOW + 61_000)).toEqual({ ok: false, reason: 'expired' })
  })

  test('signed far in the past', () => {
    const old = signContext(ADAPTER, { principal, requestId: 'r' }, NOW - 24 * 3600_000)
    expect(verifyContext(KEYS, old, NOW)).toEqual({ ok: false, reason: 'expired' })
  })

  test('a context that would outlive one request (exp years ahead, signed with the key) → lifetime', () => {
    const exp = Math.floor(NOW / 1000) + 10 * 365 * 24 * 3600
    expect(verifyContext(KEYS, signRaw(JSON.stringify({ principal, requestId: 'r', exp })), NOW)).toEqual({ ok: false, reason: 'lifetime' })
  })

  test('a signer whose clock runs up to a minute ahead still passes', () => {
    expect(verifyContext(KEYS, signContext(ADAPTER, { principal, requestId: 'r' }, NOW + 60_000), NOW).ok).toBe(true)
    expect(verifyContext(KEYS, signContext(ADAPTER, { principal, requestId: 'r' }, NOW + 62_000), NOW)).toEqual({ ok: false, reason: 'lifetime' })
  })

  test('a signed payload without a numeric exp', () => {
    expect(verifyContext(KEYS, signRaw(JSON.stringify({ principal, requestId: 'r' })), NOW)).toEqual({ ok: false, reason: 'expired' })
    expect(verifyContext(KEYS, signRaw(JSON.stringify({ principal, requestId: 'r', exp: '9999999999' })), NOW)).toEqual({ ok: false, reason: 'expired' })
  })
})

describe('missing and malformed', () => {
  test('missing', () => {
    expect(verifyContext(KEYS, undefined, NOW)).toEqual({ ok: false, reason: 'missing' })
    expect(verifyContext(KEYS, '', NOW)).toEqual({ ok: false, reason: 'missing' })
  })

  test.each([
    ['no dot', 'abcdef'],
    ['two parts', 'xrpc-adapter.abc'],
    ['four parts', 'xrpc-adapter.a.b.c'],
    ['empty issuer', '.abc.def'],
    ['empty body', 'xrpc-adapter..abc'],
    ['empty signature', 'xrpc-adapter.abc.'],
    ['just dots', '..'],
  ])('%s → malformed', (_label, header) => {
    expect(verifyContext(KEYS, header, NOW)).toEqual({ ok: false, reason: 'malformed' })
  })

  test('garbage with a dot → bad-signature (the signature is checked before the body is read)', () => {
    expect(verifyContext(KEYS, 'xrpc-adapter.not json.at all', NOW)).toEqual({ ok: false, reason: 'bad-signature' })
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
    ['an app principal whose DID is not a DID', JSON.stringify({ principal: { kind: 'app', appDid: 'nope' }, requestId: 'r', exp })],
    ['a principal of no known kind', JSON.stringify({ principal: { kind: 'root' }, requestId: 'r', exp })],
  ])('correctly signed, but %s → malformed', (_label, raw) => {
    expect(verifyContext(KEYS, signRaw(raw), NOW)).toEqual({ ok: false, reason: 'malformed' })
  })
})

describe('rotating a key', () => {
  const NEW = 'n'.repeat(48)
  const rotating: CallerKeys = { ...KEYS, 'xrpc-adapter': NEW, previous: { 'xrpc-adapter': SECRET } }

  it('verifies contexts signed with the issuer\'s current key and with its key before the rotation', () => {
    const byNew = signContext({ issuer: 'xrpc-adapter', key: NEW }, { principal, requestId: 'r1' }, NOW)
    const byOld = signContext(ADAPTER, { principal, requestId: 'r2' }, NOW)
    expect(verifyContext(rotating, byNew, NOW)).toMatchObject({ ok: true, context: { issuer: 'xrpc-adapter', requestId: 'r1' } })
    expect(verifyContext(rotating, byOld, NOW)).toMatchObject({ ok: true, context: { issuer: 'xrpc-adapter', requestId: 'r2' } })
    // once the rotation is over (no previous key) the old one is refused
    expect(verifyContext({ ...KEYS, 'xrpc-adapter': NEW }, byOld, NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })

  it("another issuer's previous key does not verify this issuer's contexts", () => {
    const keys: CallerKeys = { ...KEYS, 'xrpc-adapter': NEW, previous: { events: SECRET } }
    expect(verifyContext(keys, signContext(ADAPTER, { principal, requestId: 'r3' }, NOW), NOW)).toEqual({ ok: false, reason: 'bad-signature' })
  })
})
