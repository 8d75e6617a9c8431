/**
 * Signing secrets through the subgraph (docs/events.md, "Signing secrets"): concurrent ensureSigningSecret calls make
 * one secret, which each answer to the apps domain carries (an operator's, only the one that made it); rotations make new generations whose predecessors keep signing until the
 * overlap ends (0 = at once); secrets are stored encrypted, one set per app and environment.
 */
import { signedContext } from '@svc/testing'
import { startStack, type TestStack } from '../../stack'
import { activeSigningSecrets, decryptSecret, encryptSecret, ensureSigningSecret, generateSigningSecret, reencryptSigningSecrets, rotateSigningSecret } from '@svc/events'

let stack: TestStack

beforeAll(async () => {
  stack = await startStack('events-signing-secrets', { workers: false })
})
afterAll(async () => {
  await stack?.stop()
})

interface Issued {
  secret: string | null
  created: boolean
  generation: number
  hint: string
  previousExpiresAt: string | null
}

async function call(as: 'operator' | 'apps', field: 'ensureSigningSecret' | 'rotateSigningSecret', vars: Record<string, unknown>): Promise<Issued> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (as === 'operator') headers.authorization = `Bearer ${stack.secrets.operatorToken}`
  else headers['svc-context'] = signedContext(stack.secrets.callerKeys, { kind: 'service', name: 'apps' })
  const args = field === 'rotateSigningSecret' ? '$a: ID!, $e: String!, $o: Int' : '$a: ID!, $e: String!'
  const pass = field === 'rotateSigningSecret' ? 'appDid: $a, environment: $e, overlapSeconds: $o' : 'appDid: $a, environment: $e'
  const res = await fetch(stack.gatewayUrl, {
    method: 'POST',
    headers,
    body: JSON.stringify({ query: `mutation(${args}) { ${field}(${pass}) { secret created generation hint previousExpiresAt } }`, variables: vars }),
  })
  const body = (await res.json()) as { data?: Record<string, Issued>; errors?: unknown[] }
  expect(body.errors).toBeUndefined()
  return body.data![field]!
}

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/

it('20 concurrent first ensures: one secret created, and every answer to the apps domain carries it', async () => {
  const a = 'did:web:concurrent-ensure.example.com'
  const results = await Promise.all(Array.from({ length: 20 }, () => call('apps', 'ensureSigningSecret', { a, e: 'test' })))
  const shown = results.filter((r) => r.secret !== null)
  expect(shown).toHaveLength(20)
  expect(new Set(shown.map((r) => r.secret)).size).toBe(1)
  expect(shown[0]!.secret).toMatch(SECRET)
  expect(results.filter((r) => r.created)).toHaveLength(1)
  expect(new Set(results.map((r) => r.hint))).toEqual(new Set([shown[0]!.secret!.slice(-4)]))
  const docs = await stack.events.SigningSecret.find({ appDid: a }).lean()
  expect(docs).toHaveLength(1)
  expect(decryptSecret(stack.secrets.webhookSecretKey, docs[0]!)).toBe(shown[0]!.secret)
  expect(JSON.stringify(docs)).not.toContain(shown[0]!.secret)
})

it('test and live have their own secrets', async () => {
  const a = 'did:web:per-env.example.com'
  const t = await call('apps', 'ensureSigningSecret', { a, e: 'test' })
  const l = await call('apps', 'ensureSigningSecret', { a, e: 'live' })
  expect(t.secret).not.toBe(l.secret)
  expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, a, 'test')).toEqual([t.secret])
  expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, a, 'live')).toEqual([l.secret])
})

it('rotation: both sign during the overlap; with overlap 0 only the new one', async () => {
  const a = 'did:web:rotation.example.com'
  const first = await call('apps', 'ensureSigningSecret', { a, e: 'test' })
  const second = await call('operator', 'rotateSigningSecret', { a, e: 'test', o: 3600 })
  expect(second).toMatchObject({ created: true, generation: 2, secret: expect.stringMatching(SECRET) })
  expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, a, 'test')).toEqual([second.secret, first.secret])
  // after the overlap only the new one signs
  const later = new Date(Date.now() + 3601_000)
  expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, a, 'test', later)).toEqual([second.secret])
  // a lost secret: rotate with overlap 0, every earlier one stops at once
  const third = await call('operator', 'rotateSigningSecret', { a, e: 'test', o: 0 })
  expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, a, 'test', new Date(Date.now() + 1000))).toEqual([third.secret])
  // ensure afterwards makes nothing: the apps domain gets the current secret, an operator its hint
  expect(await call('apps', 'ensureSigningSecret', { a, e: 'test' })).toMatchObject({ secret: third.secret, created: false, generation: 3, hint: third.secret!.slice(-4) })
  expect(await call('operator', 'ensureSigningSecret', { a, e: 'test' })).toMatchObject({ secret: null, created: false, generation: 3, hint: third.secret!.slice(-4) })
})

it('a rotation waits for the app environment\'s turn: one held by another rotation keeps it from writing anything', async () => {
  const a = 'did:web:rotation-turn.example.com'
  await call('apps', 'ensureSigningSecret', { a, e: 'test' })
  // another rotation holds the turn (the earlier secrets' end is a filtered update: two at once could undo an
  // --overlap-hours 0 on FerretDB, which applies it by reading and writing back)
  await stack.events.SigningSecretTurn.create({ _id: `test ${a}#1`, key: `test ${a}`, n: 1, expiresAt: new Date(Date.now() + 600_000), endedAt: null })
  const refused = await rotateSigningSecret(stack.events, stack.secrets.webhookSecretKey, a, 'test', 0).catch((err: unknown) => err)
  expect(refused).toMatchObject({ code: 'ServiceUnavailable' })
  expect(await stack.events.SigningSecret.countDocuments({ appDid: a })).toBe(1)
  // once it ends, the rotation goes through
  await stack.events.SigningSecretTurn.updateOne({ _id: `test ${a}#1` }, { $set: { endedAt: new Date() } })
  expect(await rotateSigningSecret(stack.events, stack.secrets.webhookSecretKey, a, 'test', 0)).toMatchObject({ generation: 2 })
})

it('a rotation whose earlier secrets cannot be given their end says so and that running it again fixes it', async () => {
  const a = 'did:web:rotation-half.example.com'
  const first = await call('apps', 'ensureSigningSecret', { a, e: 'test' })
  const SigningSecret = new Proxy(stack.events.SigningSecret, {
    get: (target, prop, receiver) => (prop === 'updateMany' ? () => Promise.reject(new Error('connection closed')) : Reflect.get(target, prop, receiver)),
  })
  const refused = await rotateSigningSecret({ ...stack.events, SigningSecret }, stack.secrets.webhookSecretKey, a, 'test', 0).catch((err: unknown) => err)
  expect(refused).toMatchObject({ code: 'ServiceUnavailable' })
  expect((refused as Error).message).toMatch(/generation 2\) was stored.*connection closed.*they still sign; run the rotation again/)
  // run again: the earlier ones (the first, and the second nobody saw) end at once
  const again = await rotateSigningSecret(stack.events, stack.secrets.webhookSecretKey, a, 'test', 0)
  expect(again.generation).toBe(3)
  expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, a, 'test', new Date(Date.now() + 1000))).toEqual([again.secret])
  expect(first.secret).not.toBe(again.secret)
})

it('concurrent rotations each get their own generation', async () => {
  const a = 'did:web:concurrent-rotation.example.com'
  await call('apps', 'ensureSigningSecret', { a, e: 'live' })
  const rotations = await Promise.all(Array.from({ length: 5 }, () => call('operator', 'rotateSigningSecret', { a, e: 'live', o: 60 })))
  expect(rotations.map((r) => r.generation).sort()).toEqual([2, 3, 4, 5, 6])
  expect(new Set(rotations.map((r) => r.secret)).size).toBe(5)
})

it('a rotation ending the earlier secrets at once, beside one with a long overlap, is never undone: 10 rounds', async () => {
  const a = 'did:web:rotation-race.example.com'
  await call('apps', 'ensureSigningSecret', { a, e: 'test' })
  for (let round = 0; round < 10; round++) {
    const [now, overlapping] = await Promise.all([
      call('operator', 'rotateSigningSecret', { a, e: 'test', o: 0 }),
      call('operator', 'rotateSigningSecret', { a, e: 'test', o: 86_400 }),
    ])
    expect(Math.abs(now.generation - overlapping.generation)).toBe(1)
    // every secret before the immediate rotation's own ended when it ran, whichever rotation came second
    const earlier = await stack.events.SigningSecret.find({ appDid: a, environment: 'test', generation: { $lt: now.generation } }).lean()
    expect(earlier.length).toBeGreaterThan(0)
    for (const s of earlier) expect({ round, generation: s.generation, ended: s.expiresAt != null && s.expiresAt.getTime() <= Date.parse(now.previousExpiresAt!) }).toEqual({ round, generation: s.generation, ended: true })
  }
})

describe('rotating WEBHOOK_SECRET_KEY', () => {
  const NEW_KEY = 'the-new-webhook-secret-key-0123456789abcdef'

  it('with the old key as _PREVIOUS the stored secrets are read and rotated; re-encrypted, the new key alone reads them', async () => {
    const app = 'did:web:key-rotation.example.com'
    const old = stack.secrets.webhookSecretKey
    const first = await ensureSigningSecret(stack.events, old, app, 'test')
    const during = { current: NEW_KEY, previous: old }
    // the apps domain's reveal and the workers' signing read the secret stored under the old key
    expect((await ensureSigningSecret(stack.events, during, app, 'test', { reveal: true })).secret).toBe(first.secret)
    expect(await activeSigningSecrets(stack.events, during, app, 'test')).toEqual([first.secret])
    // a rotation meanwhile stores its secret under the new key; the earlier one keeps signing for the overlap
    const rotated = await rotateSigningSecret(stack.events, during, app, 'test', 3600)
    const stored = await stack.events.SigningSecret.findOne({ appDid: app, generation: rotated.generation }).lean()
    expect(decryptSecret(NEW_KEY, stored!)).toBe(rotated.secret)
    expect(await activeSigningSecrets(stack.events, NEW_KEY, app, 'test').catch((err: Error) => err.message)).toMatch(/cannot be read/)

    const report = await reencryptSigningSecrets(stack.events, during)
    expect(report.reencrypted).toBeGreaterThanOrEqual(1)
    expect(report.unreadable).toBe(0)
    expect(await activeSigningSecrets(stack.events, NEW_KEY, app, 'test')).toEqual([rotated.secret, first.secret])
    // run again: nothing left to move
    expect((await reencryptSigningSecrets(stack.events, during)).reencrypted).toBe(0)
    await reencryptSigningSecrets(stack.events, { current: old, previous: NEW_KEY }) // back, for the other tests of this file
  })

  it('a secret neither key reads: the apps domain\'s ensure answers ServiceUnavailable, not a 500', async () => {
    const app = 'did:web:key-lost.example.com'
    const secret = generateSigningSecret()
    await stack.events.SigningSecret.create({ appDid: app, environment: 'test', generation: 1, hint: secret.slice(-4), expiresAt: null, ...encryptSecret(NEW_KEY, secret) })
    const res = await fetch(stack.gatewayUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'svc-context': signedContext(stack.secrets.callerKeys, { kind: 'service', name: 'apps' }) },
      body: JSON.stringify({ query: 'mutation($a: ID!) { ensureSigningSecret(appDid: $a, environment: "test") { secret } }', variables: { a: app } }),
    })
    const body = (await res.json()) as { errors?: { message: string; extensions?: { code?: string } }[] }
    expect(body.errors?.[0]?.extensions?.code).toBe('ServiceUnavailable')
    expect(body.errors?.[0]?.message).toMatch(/cannot be read with WEBHOOK_SECRET_KEY/)
    await stack.events.SigningSecret.deleteMany({ appDid: app })
  })
})
