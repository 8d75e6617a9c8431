/**
 * `npm run operator:payments` as the README documents it, run as its own process against a payments database on the
 * test FerretDB: `checkout` prints a checkout's state by id or by order id and never its tokens; `sweep` expires what
 * is due and finishes what was recorded, once, and prints the counts; usage errors exit 2, contract errors 1.
 */
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { TID } from '@atproto/common'
import { initiateCheckout, payCheckout } from '../src'
import { claimSettlement, recordOutcome } from '../src/domain/settlement'
import { authorizationFor, browserTokenOf, GOOD_CARD, newDid, openDomain, productOf, SERVICE_DID, type TestDomain, serving } from './helpers'

const run = promisify(execFile)
const ROOT = join(__dirname, '..', '..', '..')
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx')
const CLI = join(ROOT, 'services', 'payments', 'src', 'cli', 'operator.ts')
const APP = 'did:web:cli-app.example.com'
const DAY = 24 * 3600 * 1000

let t: TestDomain

async function operator(...args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  const env = {
    ...process.env,
    MONGO_URL: t.mongoUrl,
    SERVICE_DID,
    // a loopback host: the command runs with the other secrets' development defaults, which a public address refuses
    CHECKOUT_URL: 'http://127.0.0.1:4001',
    PAYMENT_TOKEN_SECRET: t.domain.tokenSecret,
    NODE_ENV: 'test',
    LOG_LEVEL: 'warn',
  }
  try {
    const { stdout, stderr } = await run(TSX, [CLI, ...args], { env })
    return { stdout, stderr, code: 0 }
  } catch (err) {
    const e = err as { stdout: string; stderr: string; code: number }
    return { stdout: e.stdout, stderr: e.stderr, code: e.code }
  }
}

async function start(initiatedAt = new Date()) {
  t.clock.now = initiatedAt
  const creator = newDid()
  const started = await initiateCheckout(serving(t.domain, { checkout: authorizationFor(creator) }), { appDid: APP, product: productOf(creator) })
  return { ...started, creator, browser: browserTokenOf(started.url) }
}

beforeAll(async () => {
  t = await openDomain('payments_operator_cli')
})
afterAll(async () => {
  await t?.close()
})

describe('checkout', () => {
  it('prints a paid checkout by id and by order id, with its record and settlement, never its tokens', async () => {
    const paid = await start()
    await payCheckout(t.domain, paid.browser, GOOD_CARD)
    const stored = await t.models.Checkout.findById(paid.checkoutId).lean()
    const settlement = await t.models.Settlement.findById(paid.checkoutId).lean()

    const json = await operator('checkout', '--id', paid.checkoutId, '--json')
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toMatchObject({
      id: paid.checkoutId,
      environment: 'test',
      status: 'completed',
      appDid: APP,
      appOrderId: stored!.appOrderId,
      recipientDid: paid.creator,
      amount: 1000,
      ref: { uri: `at://${SERVICE_DID}/money.svc.payment.record/${settlement!.recordTid}`, cid: stored!.ref!.cid },
      completedAt: expect.any(String),
      failedAt: null,
      settlement: { by: 'payment', processor: 'test', outcome: { ok: true, chargeId: expect.stringMatching(/^ch_test_/) } },
    })

    const text = await operator('checkout', '--order', stored!.appOrderId, '--app', APP, '--env', 'test')
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(new RegExp(`^${paid.checkoutId}  completed  test\n`))
    expect(text.stdout).toContain(`payment record at://${SERVICE_DID}/`)
    expect(text.stdout).toMatch(/settlement: claimed by payment at .* \(processor test\), paid, charge ch_test_/)

    for (const out of [json.stdout, text.stdout]) {
      for (const secret of [paid.token, paid.browser, stored!.nonce, stored!.statusTokenHash, stored!.browserTokenHash]) expect(out).not.toContain(secret)
    }
  })

  it('a pending checkout has no settlement yet', async () => {
    const pending = await start()
    const res = JSON.parse((await operator('checkout', '--id', pending.checkoutId, '--json')).stdout)
    expect(res).toMatchObject({ status: 'pending', settlement: null, ref: null })
  })

  // each case is its own process and touches nothing another case reads, so they run side by side
  it.concurrent.each<[string[], number, RegExp]>([
    [['checkout'], 2, /--id or --order is required/],
    [['checkout', '--id', 'chk_x', '--order', 'o-1'], 2, /not both/],
    [['checkout', '--order', 'o-1', '--app', APP], 2, /--env is required/],
    [['checkout', '--order', 'o-1', '--env', 'test'], 2, /--app is required/],
    [['checkout', '--order', 'o-1', '--app', APP, '--env', 'prod'], 1, /^InvalidRequest: environment/],
    [['checkout', '--id', 'chk_000000000000000000000000'], 1, /^NotFound: no checkout chk_000000000000000000000000/],
    [['checkout', '--order', 'o-none', '--app', APP, '--env', 'live'], 1, /^NotFound: /],
    [['sweep', '--limit', '0'], 2, /--limit/],
    // another command's option, an option given twice, a stray word: refused before anything runs (a sweep of everything)
    [['sweep', '--id', 'chk_000000000000000000000000'], 2, /sweep takes no --id/],
    [['sweep', '--limit', '5', '--limit', '500'], 2, /--limit is given twice/],
    [['sweep', 'now'], 2, /sweep takes no argument now/],
    [['nope'], 2, /unknown command nope/],
  ])('%j exits %i', async (args, code, message) => {
    const res = await operator(...args)
    expect(res.code).toBe(code)
    expect(res.stderr).toMatch(message)
  })
})

describe('sweep', () => {
  it('expires what is due and finishes what was recorded, once, and prints the counts', async () => {
    const due = await start(new Date(Date.now() - 2 * DAY))
    const recorded = await start(new Date(Date.now() - 2 * DAY))
    const fresh = await start()
    // a payment whose outcome was recorded by a process that died before applying it
    t.clock.now = new Date()
    const recordTid = TID.nextStr()
    expect(await claimSettlement(t.domain, { _id: recorded.checkoutId, environment: 'test', appDid: APP }, 'payment', { processor: 'test', recordTid })).toBe(true)
    await t.models.Checkout.updateOne({ _id: recorded.checkoutId }, { $set: { status: 'processing' } })
    await recordOutcome(t.domain, recorded.checkoutId, { ok: true, chargeId: 'ch_test_cli' })

    const res = await operator('sweep')
    expect(res.code).toBe(0)
    expect(res.stdout).toBe('expired 1, recovered 1, failed 0\n')
    expect(await t.models.Checkout.findById(due.checkoutId).lean()).toMatchObject({ status: 'failed', failureReason: 'expired' })
    expect(await t.models.Checkout.findById(recorded.checkoutId).lean()).toMatchObject({
      status: 'completed',
      ref: { uri: `at://${SERVICE_DID}/money.svc.payment.record/${recordTid}` },
    })
    expect(await t.models.Checkout.findById(fresh.checkoutId).lean()).toMatchObject({ status: 'pending' })

    const again = await operator('sweep', '--json')
    expect(again.code).toBe(0)
    expect(JSON.parse(again.stdout)).toEqual({ expired: 0, recovered: 0, failed: 0 })
  })
})
