/**
 * `npm run operator:actors` as the README documents it: run as its own process against the stack's database,
 * its effect checked through money.svc.actor.getPayoutStatus / getProfile.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startStack, type TestApp, type TestStack } from '../../stack'

const run = promisify(execFile)
const ROOT = join(__dirname, '..', '..', '..')
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx')
const CLI = join(ROOT, 'services', 'actors', 'src', 'cli', 'operator.ts')
const PAYOUT = 'money.svc.actor.getPayoutStatus'
const PROFILE = 'money.svc.actor.getProfile'

// each command is a process of its own, compiled by tsx as it starts: seconds each on a loaded 2-core machine, and
// a test runs several (CI once took over 60 s for five run side by side)
jest.setTimeout(180_000)

let stack: TestStack
let app: TestApp

async function operator(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return operatorWith({}, ...args)
}

async function operatorWith(extraEnv: Record<string, string>, ...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const env = {
      ...process.env,
      MONGO_URL: stack.mongoUrl,
      REDIS_URL: stack.redisUrl,
      REDIS_PREFIX: stack.redisPrefix,
      DASHBOARD_URL: `${stack.checkoutUrl}/dashboard`,
      NODE_ENV: 'test',
      ...extraEnv,
    }
    const { stdout, stderr } = await run(TSX, [CLI, ...args], { env })
    return { stdout, stderr, code: 0 }
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number }
    return { stdout: e.stdout, stderr: e.stderr, code: e.code }
  }
}

async function xrpc(nsid: string, params: Record<string, string>) {
  const url = new URL(`/xrpc/${nsid}`, stack.apiUrl)
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v)
  const res = await fetch(url, { headers: { authorization: `Bearer ${await app.jwt(nsid)}` } })
  return { status: res.status, body: (await res.json()) as any }
}

beforeAll(async () => {
  stack = await startStack('actors_operator_cli')
  app = await stack.newApp({ environments: ['test', 'live'] })
})
afterAll(async () => {
  await stack?.stop()
})

test('create-creator, then set-payout-status, seen by getPayoutStatus and getProfile', async () => {
  const did = 'did:plc:clicreator00000000000000'
  const created = await operator('create-creator', '--json', '--did', did, '--env', 'test', '--display-name', 'CLI Creator', '--payment-types', 'tip')
  expect(created.code).toBe(0)
  expect(JSON.parse(created.stdout)).toMatchObject({ did, environment: 'test', kind: 'creator', payoutStatus: 'onboarding-required', payable: false })
  expect(await xrpc(PAYOUT, { actor: did, environment: 'test' })).toEqual({ status: 200, body: { actor: did, payable: false, status: 'onboarding-required' } })

  const ready = await operator('set-payout-status', '--did', did, '--env', 'test', '--status', 'ready')
  expect(ready.code).toBe(0)
  expect(ready.stdout).toMatch(/payout status ready \(payable: true\)/)
  expect(await xrpc(PAYOUT, { actor: did, environment: 'test' })).toEqual({ status: 200, body: { actor: did, payable: true, status: 'ready' } })
  expect(await xrpc(PROFILE, { actor: did, environment: 'test' })).toMatchObject({
    status: 200,
    body: { did, displayName: 'CLI Creator', payable: true, paymentTypes: ['tip'] },
  })
  // only in test
  expect((await xrpc(PAYOUT, { actor: did, environment: 'live' })).body.error).toBe('ActorNotFound')
})

test('create-creator with every option; running it again updates the options given', async () => {
  const did = 'did:plc:cliproject00000000000000'
  const first = await operator('create-creator', '--json', '--did', did, '--env', 'live', '--kind', 'project', '--payout-status', 'pending-verification')
  expect(JSON.parse(first.stdout)).toMatchObject({ kind: 'project', payoutStatus: 'pending-verification', paymentTypes: ['tip', 'shop'], displayName: null })
  const again = await operator('create-creator', '--json', '--did', did, '--env', 'live', '--payout-status', 'restricted')
  expect(JSON.parse(again.stdout)).toMatchObject({ kind: 'project', payoutStatus: 'restricted' })
  expect(JSON.parse(again.stdout).createdAt).toBe(JSON.parse(first.stdout).createdAt)
  expect(await stack.actors.Actor.countDocuments({ did })).toBe(1)
  expect(await xrpc(PAYOUT, { actor: did, environment: 'live' })).toEqual({ status: 200, body: { actor: did, payable: false, status: 'restricted' } })
})

test('bad input is refused with the contract error and a non-zero exit, and changes nothing', async () => {
  // each refusal is its own process; none writes, so they run side by side
  const [badStatus, badDid, badEnv, badTypes, badKind, unknown, usage, noStatus, unknownCommand] = await Promise.all([
    operator('create-creator', '--did', 'did:plc:clibad0000000000000000', '--env', 'test', '--payout-status', 'payable'),
    operator('create-creator', '--did', 'not-a-did', '--env', 'test'),
    operator('create-creator', '--did', 'did:plc:clibad0000000000000000', '--env', 'prod'),
    operator('create-creator', '--did', 'did:plc:clibad0000000000000000', '--env', 'test', '--payment-types', 'gift'),
    operator('create-creator', '--did', 'did:plc:clibad0000000000000000', '--env', 'test', '--kind', 'label'),
    operator('set-payout-status', '--did', 'did:plc:nobody00000000000000000', '--env', 'test', '--status', 'ready'),
    operator('create-creator', '--env', 'test'),
    operator('set-payout-status', '--did', 'did:plc:x', '--env', 'test'),
    operator('frobnicate'),
  ])
  expect(badStatus.code).toBe(1)
  expect(badStatus.stderr).toMatch(/^InvalidRequest: payout status must be one of ready, onboarding-required, pending-verification, restricted/)
  expect(badDid.stderr).toMatch(/^InvalidRequest: did must be a DID/)
  expect(badEnv.stderr).toMatch(/^InvalidRequest: environment/)
  expect(badTypes.stderr).toMatch(/^InvalidRequest: paymentTypes/)
  expect(badKind.stderr).toMatch(/^InvalidRequest: kind/)
  expect(await stack.actors.Actor.countDocuments({ did: { $in: ['did:plc:clibad0000000000000000', 'not-a-did'] } })).toBe(0)

  expect(unknown.code).toBe(1)
  expect(unknown.stderr).toMatch(/^ActorNotFound: /)

  expect(usage.code).toBe(2)
  expect(usage.stderr).toMatch(/--did is required/)
  expect(noStatus.stderr).toMatch(/--status is required/)
  expect(unknownCommand.code).toBe(2)
})

test('dashboard-link prints a single-use sign-in link that opens a dashboard session on the page named by --next', async () => {
  const did = 'did:plc:clidashboard000000000000'
  const unknown = await operator('dashboard-link', '--did', did, '--env', 'test') // no such actor yet
  expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringMatching(/^ActorNotFound: .*create it first with create-creator --did \S+ --env test/)])
  expect((await operator('create-creator', '--did', did, '--env', 'test')).code).toBe(0)
  expect((await operator('dashboard-link', '--did', did, '--env', 'test', '--next', 'https://evil.example/')).code).toBe(2)
  // Redis away: the command says which store did not answer, and to try again later (exit 75)
  const away = await operatorWith({ REDIS_URL: 'redis://127.0.0.1:1' }, 'dashboard-link', '--did', did, '--env', 'test')
  expect({ code: away.code, stderr: away.stderr }).toEqual({ code: 75, stderr: expect.stringMatching(/^ServiceUnavailable: Redis \(REDIS_URL\) did not answer, so no link was made: /) })
  const printed = await operator('dashboard-link', '--json', '--did', did, '--env', 'test', '--next', '/dashboard')
  expect(printed.code).toBe(0)
  const { url, expiresAt } = JSON.parse(printed.stdout) as { url: string; expiresAt: string }
  expect(url).toMatch(new RegExp(`^${stack.checkoutUrl}/dashboard/login/dsl_[A-Za-z0-9_-]{43}\\?next=%2Fdashboard$`))
  expect(new Date(expiresAt).getTime() - Date.now()).toBeGreaterThan(14 * 60_000)
  // opening the link asks (a mail scanner fetching it spends nothing, and no session starts)
  const page = await fetch(url, { redirect: 'manual' })
  expect(page.status).toBe(200)
  const pageText = await page.text()
  expect(pageText).toContain(did)
  expect(page.headers.get('set-cookie')).not.toMatch(/svc_dashboard=/)
  expect((await fetch(url, { redirect: 'manual' })).status).toBe(200)
  const nonceCookie = page.headers.get('set-cookie')!.split(';')[0]!
  expect(page.headers.get('set-cookie')).toMatch(/SameSite=Strict/i)
  const nonce = /name="nonce" value="([^"]+)"/.exec(pageText)![1]!
  const post = (headers: Record<string, string>, body: Record<string, string>) =>
    fetch(new URL(url).origin + new URL(url).pathname, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(body).toString() })
  // a post from elsewhere carries no nonce cookie (SameSite=Strict): nothing happens, the link stays
  const forged = await post({}, { next: '/dashboard', nonce })
  expect(forged.headers.get('set-cookie') ?? '').not.toMatch(/svc_dashboard=/)
  // the page's own button signs in and spends the link
  const signIn = await post({ cookie: nonceCookie }, { next: '/dashboard', nonce })
  expect({ status: signIn.status, location: signIn.headers.get('location') }).toEqual({ status: 303, location: '/dashboard' })
  const cookie = signIn.headers.get('set-cookie')!.split(', ').find((c) => c.startsWith('svc_dashboard='))!.split(';')[0]!
  const home = await fetch(`${stack.checkoutUrl}/dashboard`, { headers: { cookie } })
  expect(home.status).toBe(200)
  expect(await home.text()).toContain(did)
  expect((await fetch(url, { redirect: 'manual' })).status).toBe(401)
  expect((await post({ cookie: nonceCookie }, { next: '/dashboard', nonce })).status).toBe(401)
})

test('signing in again in the same browser ends the session it had: a session cookie left behind (a shared machine, another creator) opens nothing', async () => {
  const actor = await stack.newActor({ environment: 'test' })
  const signIn = async (cookieBefore?: string): Promise<string> => {
    const url = await stack.dashboardLoginUrl(actor.did, 'test')
    const page = await fetch(url, { redirect: 'manual' })
    const nonceCookie = page.headers.get('set-cookie')!.split(';')[0]!
    const nonce = /name="nonce" value="([^"]+)"/.exec(await page.text())![1]!
    const signedIn = await fetch(new URL(url).origin + new URL(url).pathname, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: [nonceCookie, cookieBefore].filter(Boolean).join('; ') },
      body: new URLSearchParams({ next: '/dashboard', nonce }).toString(),
    })
    expect(signedIn.status).toBe(303)
    return signedIn.headers.get('set-cookie')!.split(', ').find((c) => c.startsWith('svc_dashboard='))!.split(';')[0]!
  }
  const home = async (cookie: string) => (await fetch(`${stack.checkoutUrl}/dashboard`, { headers: { cookie } })).status
  const first = await signIn()
  expect(await home(first)).toBe(200)
  const second = await signIn(first)
  expect(await home(second)).toBe(200)
  expect(await home(first)).toBe(401)
})

test('end-dashboard-sessions signs an actor out everywhere: its sessions and unused links open nothing, a new link signs in', async () => {
  const did = 'did:plc:clisignout00000000000000'
  const unknown = await operator('end-dashboard-sessions', '--did', did, '--env', 'test')
  expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringMatching(/^ActorNotFound: .*create it first with create-creator/)])
  expect((await operator('create-creator', '--did', did, '--env', 'test')).code).toBe(0)
  const [session, otherActor] = await Promise.all([stack.dashboardCookie(did, 'test'), stack.newActor({ environment: 'test' }).then((a) => stack.dashboardCookie(a.did, 'test'))])
  const unusedLink = await stack.dashboardLoginUrl(did, 'test')
  const home = async (cookie: string) => (await fetch(`${stack.checkoutUrl}/dashboard`, { headers: { cookie } })).status
  expect(await home(session)).toBe(200)

  const away = await operatorWith({ REDIS_URL: 'redis://127.0.0.1:1' }, 'end-dashboard-sessions', '--did', did, '--env', 'test')
  expect({ code: away.code, stderr: away.stderr }).toEqual({ code: 75, stderr: expect.stringMatching(/^ServiceUnavailable: Redis \(REDIS_URL\) did not answer, so no session was ended: /) })
  expect(await home(session)).toBe(200)

  const ended = await operator('end-dashboard-sessions', '--json', '--did', did, '--env', 'test')
  expect(ended.code).toBe(0)
  expect(JSON.parse(ended.stdout)).toEqual({ did, environment: 'test', ended: true })
  expect(await home(session)).toBe(401)
  expect((await fetch(unusedLink, { redirect: 'manual' })).status).toBe(401)
  expect(await home(otherActor)).toBe(200)
  expect(await home(await stack.dashboardCookie(did, 'test'))).toBe(200)
})
