/**
 * Endpoint health (docs/events.md, "Endpoint health") through the real workers, gateway and apps subgraph: an
 * endpoint that answers 410 Gone is disabled at once, one whose every attempt fails for DELIVERY_DISABLE_AFTER_MS
 * (2 s here) is disabled as failing; a disabled endpoint is paused, so its deliveries are held, not failed; the
 * developer config route shows why and since when; the app unpausing it (updateConfig) re-enables it and the held
 * deliveries are sent.
 */
import { ensureSigningSecret } from '@svc/events'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectOk, httpRequest, updateConfig } from '../adapter/helpers'
import { startReceiver, type Receiver } from './helpers/receiver'
import { configureChannel, getDelivery, waitFor, waitForStatus, writeEvent } from './helpers/events'

/** long enough that the steps between a success and the check after it fit in it on a loaded machine */
const DISABLE_AFTER_MS = 2000
let stack: TestStack
const receivers: Receiver[] = []
const logs: string[] = []

beforeAll(async () => {
  stack = await startStack('endpoint-health', { allowLoopbackWebhooks: true, delivery: { disableAfterMs: DISABLE_AFTER_MS }, logs })
})
afterAll(async () => {
  await stack?.stop()
  await Promise.all(receivers.map((r) => r.close()))
})

/** An app whose webhook points at a receiver answering `status()` (changeable while the test runs). */
async function appAnswering(status: () => number): Promise<{ app: TestApp; key: string }> {
  const app = await stack.newApp()
  await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app.did, 'test')
  const receiver = await startReceiver(() => ({ status: status(), body: {} }))
  receivers.push(receiver)
  await configureChannel(stack, app.did, { url: `${receiver.url}/hook` })
  return { app, key: await app.apiKey('test') }
}

async function webhookState(app: TestApp, key: string) {
  const res = await httpRequest(`${stack.checkoutUrl}/api/app/developer/config?app=${encodeURIComponent(app.did)}&environment=test`, { headers: bearer(key) })
  return expectOk(res).webhook as { configured: boolean; paused: boolean; disabled: { reason: string; at: string } | null }
}

it('410 Gone disables the endpoint at once; its deliveries are held; unpausing re-enables it and sends them', async () => {
  let status = 410
  const { app, key } = await appAnswering(() => status)
  const before = Date.now()
  const { deliveryId } = await writeEvent(stack, { appDid: app.did, type: 'payment.completed' })

  const state = await waitFor(async () => {
    const s = await webhookState(app, key)
    return s.disabled ? s : null
  }, 'the endpoint to be disabled')
  expect(state).toMatchObject({ configured: true, paused: true, disabled: { reason: 'gone' } })
  expect(Date.parse(state.disabled!.at)).toBeGreaterThanOrEqual(before - 1000)
  // the next attempt finds it paused: held, not failed, with the one attempt that got the 410
  const held = await waitForStatus(stack, deliveryId, 'held')
  expect(held.attempts!.map((a) => a.statusCode)).toEqual([410])
  // the apps domain's line names the attempt that disabled it (its request id is the attempt's)
  const disabledLine = logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.appDid === app.did && String(l.msg).startsWith('event endpoint disabled') && l.reason === 'gone' && 'channel' in l)
  expect(disabledLine?.reqId).toBe(`${deliveryId}.1`)

  status = 200
  expectOk(await updateConfig(stack, app, { environment: 'test', webhookPaused: false }))
  expect(await webhookState(app, key)).toEqual({ configured: true, paused: false, disabled: null })
  const delivered = await waitForStatus(stack, deliveryId, 'delivered')
  expect(delivered.attempts!.map((a) => a.statusCode)).toEqual([410, 200])
})

it('an endpoint failing every attempt for the period is disabled as failing; one success would have reset it', async () => {
  const { app, key } = await appAnswering(() => 500)
  const first = await writeEvent(stack, { appDid: app.did, type: 'payment.completed' })
  const state = await waitFor(async () => {
    const s = await webhookState(app, key)
    return s.disabled ? s : null
  }, 'the endpoint to be disabled', 20_000)
  expect(state).toMatchObject({ paused: true, disabled: { reason: 'failing' } })
  const held = await waitForStatus(stack, first.deliveryId, 'held')
  const attempts = held.attempts!
  // it failed for at least the period before it was disabled
  expect(attempts.length).toBeGreaterThan(1)
  expect(Date.parse(state.disabled!.at) - attempts[0]!.attemptedAt.getTime()).toBeGreaterThanOrEqual(DISABLE_AFTER_MS)

  // an endpoint that answers in between is not disabled
  let status = 500
  const { app: flaky, key: flakyKey } = await appAnswering(() => status)
  await writeEvent(stack, { appDid: flaky.did, type: 'payment.completed' })
  await new Promise((r) => setTimeout(r, 700))
  status = 200
  const ok = await writeEvent(stack, { appDid: flaky.did, type: 'payment.completed' })
  await waitForStatus(stack, ok.deliveryId, 'delivered')
  status = 500
  await writeEvent(stack, { appDid: flaky.did, type: 'payment.completed' })
  await new Promise((r) => setTimeout(r, 600))
  expect((await webhookState(flaky, flakyKey)).disabled).toBeNull()
  expect((await getDelivery(stack, ok.deliveryId))?.status).toBe('delivered')
})

it('an endpoint disabled as failing and enabled again starts a fresh clock: one more failure does not disable it again', async () => {
  let answers = [500]
  const { app, key } = await appAnswering(() => answers.shift() ?? 200)
  const first = await writeEvent(stack, { appDid: app.did, type: 'payment.completed' })
  answers = new Array<number>(1000).fill(500)
  await waitFor(async () => ((await webhookState(app, key)).disabled ? true : null), 'the endpoint to be disabled', 20_000)
  // a failure clock lives twice the period: with the real period (5 days) it would still be there when the app
  // enables the endpoint again days later; here (2 s) it is kept as long
  for (const clock of await stack.redis.keys(`${stack.redisPrefix}endpoint-failing-since:${app.did}:*`)) await stack.redis.pexpire(clock, 60_000)
  await waitForStatus(stack, first.deliveryId, 'held')
  // the app fixes its receiver, which fails once more as it starts, and enables the endpoint again (at once: the
  // first failure's time would lapse after twice the period)
  answers = [500]
  const attemptsBefore = (await getDelivery(stack, first.deliveryId))!.attempts!.length
  expectOk(await updateConfig(stack, app, { environment: 'test', webhookPaused: false }))
  const delivered = await waitForStatus(stack, first.deliveryId, 'delivered')
  expect(delivered.attempts!.slice(attemptsBefore).map((a) => a.statusCode)).toEqual([500, 200])
  expect((await webhookState(app, key)).disabled).toBeNull()
})
