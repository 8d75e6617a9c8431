/**
 * `npm run operator:events` as docs/events.md documents it, run as its own process against the stack's database:
 * rotate-secret prints the new secret once and when the previous ones stop signing (the secret it prints is the one
 * stored, and signs from now on); list-deliveries shows the delivery log; usage errors exit 2, contract errors 1.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startStack, type TestStack } from '../../stack'
import { activeSigningSecrets, createDelivery, ensureSigningSecret, newDeliveryId } from '@svc/events'

const run = promisify(execFile)
const ROOT = join(__dirname, '..', '..', '..')
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx')
const CLI = join(ROOT, 'services', 'events', 'src', 'cli', 'operator.ts')

// each command is a process of its own, compiled by tsx as it starts: seconds each on a loaded 2-core machine, and
// a test runs several (CI once took over 60 s for five run side by side)
jest.setTimeout(180_000)

let stack: TestStack

async function operator(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const env = { ...process.env, MONGO_URL: stack.mongoUrl, WEBHOOK_SECRET_KEY: stack.secrets.webhookSecretKey, NODE_ENV: 'test' }
  try {
    const { stdout, stderr } = await run(TSX, [CLI, ...args], { env })
    return { stdout, stderr, code: 0 }
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number }
    return { stdout: e.stdout, stderr: e.stderr, code: e.code }
  }
}

/** The CLI run with another WEBHOOK_SECRET_KEY than the one the stored secrets were encrypted with. */
const NEW_KEY = 'another-key-0123456789abcdef0123456789abcdef'
async function wrongKey(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const env = { ...process.env, MONGO_URL: stack.mongoUrl, WEBHOOK_SECRET_KEY: NEW_KEY, NODE_ENV: 'test' }
  return run(TSX, [CLI, ...args], { env }).then(
    ({ stdout, stderr }) => ({ stdout, stderr, code: 0 }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  )
}

beforeAll(async () => {
  stack = await startStack('events-operator-cli', { workers: false })
})
afterAll(async () => {
  await stack?.stop()
})

const SECRET = /whsec_[A-Za-z0-9+/]{43}=/

describe('rotate-secret', () => {
  it('prints the new secret once and when the previous ones stop signing; both sign until then', async () => {
    const app = 'did:web:cli-rotate.example.com'
    const first = await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app, 'test')
    const res = await operator('rotate-secret', '--app', app, '--env', 'test')
    expect(res.code).toBe(0)
    const printed = res.stdout.match(SECRET)?.[0]
    expect(printed).toBeDefined()
    expect(res.stdout.match(new RegExp(SECRET.source, 'g'))).toHaveLength(1)
    expect(res.stdout).toMatch(/generation 2/)
    expect(res.stdout).toMatch(/keep signing until \d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z \(24 h\)/)
    expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, app, 'test')).toEqual([printed, first.secret])
  })

  it('--overlap-hours 0: only the new secret signs from now on (a lost secret); --json', async () => {
    const app = 'did:web:cli-lost.example.com'
    await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app, 'live')
    const res = await operator('rotate-secret', '--app', app, '--env', 'live', '--overlap-hours', '0', '--json')
    expect(res.code).toBe(0)
    const out = JSON.parse(res.stdout)
    expect(out).toEqual({ appDid: app, environment: 'live', secret: expect.stringMatching(SECRET), generation: 2, hint: out.secret.slice(-4), previousExpiresAt: expect.any(String) })
    expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, app, 'live', new Date(Date.now() + 1000))).toEqual([out.secret])
  })

  it('an app environment without a secret gets its first one', async () => {
    const res = await operator('rotate-secret', '--app', 'did:web:cli-new.example.com', '--env', 'test', '--overlap-hours', '2')
    expect(res.code).toBe(0)
    expect(res.stdout).toMatch(/generation 1/)
    expect(res.stdout).toMatch(/no previous secret/)
  })

  it('a WEBHOOK_SECRET_KEY that does not decrypt the stored secrets (not the workers\' key) changes nothing (exit 1)', async () => {
    const app = 'did:web:cli-wrong-key.example.com'
    const first = await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app, 'test')
    const res = await wrongKey('rotate-secret', '--app', app, '--env', 'test')
    expect(res.code).toBe(1)
    expect(res.stderr).toMatch(/does not decrypt the stored signing secrets/)
    expect(res.stdout).not.toMatch(SECRET)
    expect(await stack.events.SigningSecret.countDocuments({ appDid: app })).toBe(1)
    expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, app, 'test')).toEqual([first.secret])
    // an app environment with no secret yet is judged by the other secrets stored
    const fresh = await wrongKey('rotate-secret', '--app', 'did:web:cli-wrong-key-new.example.com', '--env', 'test')
    expect(fresh.code).toBe(1)
    expect(await stack.events.SigningSecret.countDocuments({ appDid: 'did:web:cli-wrong-key-new.example.com' })).toBe(0)
  })

  it('--replace-unreadable --overlap-hours 0: the key itself was replaced; the new secret is stored under it and the unreadable ones stop', async () => {
    const app = 'did:web:cli-replaced-key.example.com'
    await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app, 'test')
    expect((await wrongKey('rotate-secret', '--app', app, '--env', 'test', '--replace-unreadable')).code).toBe(2) // needs overlap 0
    const res = await wrongKey('rotate-secret', '--app', app, '--env', 'test', '--replace-unreadable', '--overlap-hours', '0', '--json')
    expect(res.code).toBe(0)
    const { secret } = JSON.parse(res.stdout) as { secret: string }
    expect(await activeSigningSecrets(stack.events, NEW_KEY, app, 'test', new Date(Date.now() + 1000))).toEqual([secret])
  })

  // each case is its own process and touches nothing another case reads, so they run side by side
  it.concurrent.each<[string[], number, RegExp]>([
    [['rotate-secret', '--env', 'test'], 2, /--app is required/],
    [['rotate-secret', '--app', 'did:web:x.example.com'], 2, /--env is required/],
    [['rotate-secret', '--app', 'did:web:x.example.com', '--env', 'test', '--overlap-hours', 'soon'], 2, /overlap-hours/],
    [['rotate-secret', '--app', 'did:web:x.example.com', '--env', 'test', '--overlap-hours', '169'], 2, /at most 168/],
    [['rotate-secret', '--app', 'did:web:x.example.com', '--env', 'prod'], 1, /InvalidRequest/],
    [['rotate-secret', '--app', 'x.example.com', '--env', 'test'], 2, /--app must be an app DID/],
    [['rotate-secret', '--app', 'did:web:x.example.com', '--env', 'test', '--overlap-hours', '0.0001'], 2, /at least one second/],
    [['rotate-secret', '--bogus'], 2, /bogus/],
    [['nope'], 2, /unknown command nope/],
  ])('%j exits %i', async (args, code, message) => {
    const res = await operator(...args)
    expect(res.code).toBe(code)
    expect(res.stderr).toMatch(message)
    expect(res.stdout).not.toMatch(SECRET)
  })
})

describe('list-deliveries', () => {
  it('newest first, with status and limit; --json has the attempts and never the body', async () => {
    const app = 'did:web:cli-list.example.com'
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      const id = newDeliveryId()
      await createDelivery(stack.deliveryLog, { id, appDid: app, environment: 'test', eventId: null, eventType: 'payment.completed', source: 'payments', createdAt: new Date(), data: {} })
      await stack.events.Delivery.collection.updateOne({ _id: id as never }, { $set: { createdAt: new Date(Date.parse('2026-03-01T00:00:00Z') + i * 1000), status: i === 1 ? 'failed' : 'pending' } })
      ids.push(id)
    }
    await stack.events.Delivery.updateOne({ _id: ids[1] }, { $push: { attempts: { number: 1, run: 1, attemptedAt: new Date(), outcome: 'failed', statusCode: 500, error: 'HTTP 500' } } })

    const text = await operator('list-deliveries', '--app', app, '--env', 'test')
    expect(text.code).toBe(0)
    const lines = text.stdout.trim().split('\n')
    expect(lines.map((l) => l.split(/\s+/)[0])).toEqual([...ids].reverse())

    const json = await operator('list-deliveries', '--app', app, '--env', 'test', '--status', 'failed', '--json')
    const rows = JSON.parse(json.stdout)
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ id: ids[1], status: 'failed', attempts: [expect.objectContaining({ number: 1, statusCode: 500, error: 'HTTP 500' })] })
    expect(rows[0].body).toBeUndefined()

    const limited = JSON.parse((await operator('list-deliveries', '--app', app, '--env', 'test', '--limit', '1', '--json')).stdout)
    expect(limited.map((r: { id: string }) => r.id)).toEqual([ids[2]])
    expect((await operator('list-deliveries', '--app', 'did:web:nobody.example.com', '--env', 'test')).stdout).toMatch(/no deliveries/)
  })

  it('a bad status or limit is a contract error (exit 1)', async () => {
    const bad = await operator('list-deliveries', '--app', 'did:web:x.example.com', '--env', 'test', '--status', 'sent')
    expect(bad.code).toBe(1)
    expect(bad.stderr).toMatch(/InvalidRequest: status/)
    const big = await operator('list-deliveries', '--app', 'did:web:x.example.com', '--env', 'test', '--limit', '101')
    expect(big.code).toBe(1)
    expect(big.stderr).toMatch(/InvalidRequest: limit/)
  })
})

// last: it moves every secret of this file's database to another key
describe('reencrypt-secrets', () => {
  it('moves the secrets stored under WEBHOOK_SECRET_KEY_PREVIOUS to WEBHOOK_SECRET_KEY, names those neither reads; needs _PREVIOUS', async () => {
    const app = 'did:web:cli-reencrypt.example.com'
    const first = await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app, 'test')
    const ROTATED_KEY = 'the-rotated-key-0123456789abcdef0123456789'
    const env = { ...process.env, MONGO_URL: stack.mongoUrl, WEBHOOK_SECRET_KEY: ROTATED_KEY, NODE_ENV: 'test' }
    const reencrypt = (extra: Record<string, string>, ...args: string[]) =>
      run(TSX, [CLI, 'reencrypt-secrets', ...args], { env: { ...env, ...extra } }).then(
        ({ stdout, stderr }) => ({ stdout, stderr, code: 0 }),
        (e: { code: number; stdout: string; stderr: string }) => e,
      )

    const without = await reencrypt({})
    expect(without.code).toBe(2)
    expect(without.stderr).toMatch(/needs WEBHOOK_SECRET_KEY_PREVIOUS/)
    expect(await activeSigningSecrets(stack.events, stack.secrets.webhookSecretKey, app, 'test')).toEqual([first.secret])

    const res = await reencrypt({ WEBHOOK_SECRET_KEY_PREVIOUS: stack.secrets.webhookSecretKey })
    expect(res.code).toBe(0)
    // the secret stored under NEW_KEY by --replace-unreadable above is one that neither key reads
    expect(res.stdout).toMatch(/^\d+ signing secrets re-encrypted under WEBHOOK_SECRET_KEY; 0 were already under it\n[1-9]\d* cannot be read with either key/)
    expect(await activeSigningSecrets(stack.events, ROTATED_KEY, app, 'test')).toEqual([first.secret])
    // run again: nothing left to move
    const again = JSON.parse((await reencrypt({ WEBHOOK_SECRET_KEY_PREVIOUS: stack.secrets.webhookSecretKey }, '--json')).stdout)
    expect(again).toMatchObject({ reencrypted: 0, current: expect.any(Number), unreadable: expect.any(Number) })
    expect(again.current).toBeGreaterThanOrEqual(1)
  })
})
