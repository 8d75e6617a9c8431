/**
 * The operator command as the README documents it: run as its own process against the stack's
 * database, its output used the way a developer would use it.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startStack, type TestStack } from '../../stack'

const run = promisify(execFile)
const ROOT = join(__dirname, '..', '..', '..')
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx')
const CLI = join(ROOT, 'services', 'apps', 'src', 'cli', 'operator.ts')

// each command is a process of its own, compiled by tsx as it starts: seconds each on a loaded 2-core machine, and
// a test runs several (CI once took over 60 s for five run side by side)
jest.setTimeout(180_000)

let stack: TestStack

async function operator(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(TSX, [CLI, ...args], {
      env: { ...process.env, MONGO_URL: stack.mongoUrl, SERVICE_DID: stack.serviceDid, NODE_ENV: 'test' },
    })
    return { stdout, stderr, code: 0 }
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number }
    return { stdout: e.stdout, stderr: e.stderr, code: e.code }
  }
}

beforeAll(async () => {
  stack = await startStack('operator_cli')
})
afterAll(async () => {
  await stack?.stop()
})

test('quickstart gives a developer everything to call getConfig and the developer config route', async () => {
  const qs = await operator('quickstart', '--json', '--app-url', 'https://shop.example.com/anything')
  expect(qs.code).toBe(0)
  const created = JSON.parse(qs.stdout) as { did: string; privateKeyHex: string; alg: string; apiKey: string; environment: string }
  expect(created).toMatchObject({ environment: 'test', alg: 'ES256K', appUrl: 'https://shop.example.com' })
  expect(created.apiKey).toMatch(/^svc_rk_test_/)

  const mint = await operator('mint-jwt', '--json', '--did', created.did, '--private-key', created.privateKeyHex, '--lxm', 'money.svc.app.getConfig')
  expect(mint.code).toBe(0)
  const { jwt } = JSON.parse(mint.stdout) as { jwt: string }
  const res = await fetch(`${stack.apiUrl}/xrpc/money.svc.app.getConfig?environment=test`, { headers: { authorization: `Bearer ${jwt}` } })
  expect(res.status).toBe(200)
  expect(await res.json()).toMatchObject({ appDid: created.did, environment: 'test', appUrl: 'https://shop.example.com' })

  const dev = await fetch(`${stack.checkoutUrl}/api/app/developer/config?app=${encodeURIComponent(created.did)}&environment=test`, {
    headers: { authorization: `Bearer ${created.apiKey}` },
  })
  expect(dev.status).toBe(200)
  expect(await dev.json()).toMatchObject({ appDid: created.did, environment: 'test', status: 'active' })
})

test('register-app, issue-key with chosen permissions, revoke-key', async () => {
  const key = JSON.parse((await operator('generate-did-key', '--json', '--alg', 'ES256')).stdout) as { did: string; privateKeyHex: string }
  expect(key.did).toMatch(/^did:key:zDn/)

  const reg = await operator('register-app', '--json', '--did', key.did, '--env', 'live', '--app-url', 'https://live.example.com',
    '--fee-share-bps', '750', '--ticket-fee-bps', '300', '--ticket-fee-flat', '45', '--ticket-fee-currency', 'eur')
  expect(reg.code).toBe(0)
  expect(JSON.parse(reg.stdout)).toMatchObject({ appDid: key.did, environment: 'live', feeShareBps: 750, ticketFee: { bps: 300, flatAmount: 45, flatCurrency: 'eur' } })

  const jwt = JSON.parse((await operator('mint-jwt', '--json', '--did', key.did, '--private-key', key.privateKeyHex, '--alg', 'ES256', '--lxm', 'money.svc.app.getConfig')).stdout).jwt
  const cfg = await fetch(`${stack.apiUrl}/xrpc/money.svc.app.getConfig?environment=live`, { headers: { authorization: `Bearer ${jwt}` } })
  expect(await cfg.json()).toMatchObject({ feeShareBps: 750, appConfig: { ticketFee: { bps: 300, flatAmount: 45, flatCurrency: 'eur', passToBuyer: false } } })

  // re-registered to move the app's origin, naming no rate: the platform's fees stay as they were
  const moved = await operator('register-app', '--json', '--did', key.did, '--env', 'live', '--app-url', 'https://moved.example.com')
  expect(moved.code).toBe(0)
  expect(JSON.parse(moved.stdout)).toMatchObject({ appUrl: 'https://moved.example.com', feeShareBps: 750, ticketFee: { bps: 300, flatAmount: 45, flatCurrency: 'eur' } })
  // and a rate named is changed alone
  const oneRate = await operator('register-app', '--json', '--did', key.did, '--env', 'live', '--app-url', 'https://moved.example.com', '--ticket-fee-bps', '250')
  expect(JSON.parse(oneRate.stdout)).toMatchObject({ feeShareBps: 750, ticketFee: { bps: 250, flatAmount: 45, flatCurrency: 'eur' } })

  const issued = await operator('issue-key', '--json', '--did', key.did, '--env', 'live', '--permissions', 'webhook.deliveries.read')
  expect(issued.code).toBe(0)
  const { key: apiKey, keyId, permissions } = JSON.parse(issued.stdout) as { key: string; keyId: string; permissions: string[] }
  expect(permissions).toEqual(['webhook.deliveries.read'])
  const url = `${stack.checkoutUrl}/api/app/developer/config?app=${encodeURIComponent(key.did)}&environment=live`
  // the key lacks app.config.read
  expect((await fetch(url, { headers: { authorization: `Bearer ${apiKey}` } })).status).toBe(401)

  const full = JSON.parse((await operator('issue-key', '--json', '--did', key.did, '--env', 'live')).stdout) as { key: string; keyId: string }
  expect((await fetch(url, { headers: { authorization: `Bearer ${full.key}` } })).status).toBe(200)
  expect((await operator('revoke-key', '--json', '--key-id', full.keyId)).code).toBe(0)
  expect((await fetch(url, { headers: { authorization: `Bearer ${full.key}` } })).status).toBe(401)
  // a key revoked already, or none: a refusal like every command's (it printed a bare sentence)
  const again = await operator('revoke-key', '--key-id', full.keyId)
  expect([again.code, again.stderr.trim()]).toEqual([1, `NotFound: no active key with the id ${full.keyId}`])
  expect(keyId).toMatch(/^key_/)
})

test('bad input is refused with the contract error and a non-zero exit, and changes nothing', async () => {
  // each refusal is its own process; none writes, so they run side by side
  const [badDid, badEnv, badPerm, usage, unknownCommand] = await Promise.all([
    operator('register-app', '--did', 'not-a-did', '--env', 'test', '--app-url', 'https://x.example.com'),
    operator('register-app', '--did', 'did:key:zQ3shBogus', '--env', 'prod', '--app-url', 'https://x.example.com'),
    operator('issue-key', '--did', 'did:key:zQ3shBogus', '--env', 'test', '--permissions', 'everything'),
    operator('register-app', '--env', 'test'),
    operator('frobnicate'),
  ])
  expect(badDid.code).toBe(1)
  expect(badDid.stderr).toMatch(/^InvalidRequest: did must be a DID/)
  expect(badEnv.code).toBe(1)
  expect(badEnv.stderr).toMatch(/^InvalidRequest: environment/)
  expect(await stack.models.App.countDocuments({ did: { $in: ['not-a-did', 'did:key:zQ3shBogus'] } })).toBe(0)

  expect(badPerm.code).toBe(1)
  expect(badPerm.stderr).toMatch(/^InvalidRequest: permissions must be among/)

  expect(usage.code).toBe(2)
  expect(usage.stderr).toMatch(/--did is required/)
  expect(unknownCommand.code).toBe(2)

  // an option given twice (the last one used to win: a live key) or one of another command: refused, nothing issued
  const [twice, foreign] = await Promise.all([
    operator('issue-key', '--did', 'did:key:zQ3shTwice', '--env', 'test', '--env', 'live'),
    operator('revoke-key', '--key-id', 'key_x', '--env', 'live'),
  ])
  expect([twice.code, twice.stderr]).toEqual([2, expect.stringMatching(/--env is given twice/)])
  expect([foreign.code, foreign.stderr]).toEqual([2, expect.stringMatching(/revoke-key takes no --env/)])
  expect(await stack.models.ApiKey.countDocuments({ appDid: 'did:key:zQ3shTwice' })).toBe(0)

  // mint-jwt refuses what the service would refuse, saying why: another DID than the key's, a lifetime over 300 s, a
  // key that is not one
  const key = JSON.parse((await operator('generate-did-key', '--json')).stdout) as { did: string; privateKeyHex: string }
  const mint = (...more: string[]) => operator('mint-jwt', '--did', key.did, '--private-key', key.privateKeyHex, '--lxm', 'money.svc.app.getConfig', ...more)
  const [otherDid, tooLong, notAKey, outOfRange] = await Promise.all([
    operator('mint-jwt', '--did', 'did:key:zQ3shOther', '--private-key', key.privateKeyHex, '--lxm', 'x.y.z'),
    mint('--expires-in', '301'),
    operator('mint-jwt', '--did', key.did, '--private-key', 'nothex', '--lxm', 'x.y.z'),
    operator('mint-jwt', '--did', key.did, '--private-key', 'f'.repeat(64), '--lxm', 'x.y.z'),
  ])
  expect([otherDid.code, otherDid.stderr]).toEqual([2, expect.stringMatching(/does not match the key/)])
  expect([tooLong.code, tooLong.stderr]).toEqual([2, expect.stringMatching(/--expires-in must be from 1 to 300/)])
  for (const refused of [notAKey, outOfRange]) {
    expect([refused.code, refused.stderr]).toEqual([2, expect.stringMatching(/--private-key must be/)])
    expect(refused.stderr).not.toMatch(/ {4}at /)
  }
  expect((await mint('--expires-in', '300')).code).toBe(0)

  // the database away: one line saying so, no stack (an operator reads it), exit 75 (try again later)
  const away = await run(TSX, [CLI, 'revoke-key', '--key-id', 'key_x'], { env: { ...process.env, MONGO_URL: 'mongodb://127.0.0.1:1/svc', NODE_ENV: 'test' } }).then(
    () => ({ code: 0, stderr: '' }),
    (e: { code: number; stderr: string }) => e,
  )
  expect(away.code).toBe(75)
  expect(away.stderr).toMatch(/^MongooseServerSelectionError: /)
  expect(away.stderr).not.toMatch(/ {4}at /)

  // an option given without its value is a usage error too (node's parseArgs: ERR_PARSE_ARGS_INVALID_OPTION_VALUE)
  const noValue = await operator('register-app', '--did')
  expect(noValue.code).toBe(2)
  expect(noValue.stderr).toMatch(/usage/i)
  expect(noValue.stderr).not.toMatch(/ {4}at /)
})
