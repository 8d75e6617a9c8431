/**
 * The files a request crosses, measured rather than counted by hand: V8's precise coverage (the inspector's
 * Profiler, call counts) over the whole in-process stack while exactly one request runs, keeping the repository's
 * source files in which some function ran (test code and node_modules left out). docs/architecture.md, "The files a
 * request crosses", lists the three paths; this test fails when a path gains or loses a file, so the list stays true.
 */
import { readFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { relative, resolve } from 'node:path'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectOk, UPDATE_CONFIG, updateConfig, xrpcGet, xrpcPost } from '../adapter/helpers'
import { initiate, paymentStatus, product, STATUS } from '../adapter/payment-helpers'
import { waitForStatus, writeEvent } from '../events/helpers/events'
import { startReceiver, type Receiver } from '../events/helpers/receiver'

const ROOT = resolve(__dirname, '..', '..', '..')
const DOC = resolve(ROOT, 'docs', 'architecture.md')

let stack: TestStack
let app: TestApp
let receiver: Receiver
const session = new Session()

beforeAll(async () => {
  // the outbox relays poll rarely: a write wakes its own process's relay, and no poll lands inside a measured request
  stack = await startStack('request-path', { allowLoopbackWebhooks: true, relayIntervalMs: 600_000 })
  receiver = await startReceiver()
  app = await stack.newApp()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false })
})
afterAll(async () => {
  await session.post('Profiler.stopPreciseCoverage').catch(() => undefined)
  session.disconnect()
  await receiver?.close()
  await stack?.stop()
})

/** The repository's source files in which a function ran during `action`. */
async function filesCrossed(action: () => Promise<void>): Promise<string[]> {
  await session.post('Profiler.takePreciseCoverage') // resets the counts
  await action()
  const { result } = await session.post('Profiler.takePreciseCoverage')
  const files = new Set<string>()
  for (const script of result) {
    const path = script.url.startsWith('file://') ? new URL(script.url).pathname : script.url
    if (!path.startsWith(ROOT + '/') || path.includes('/node_modules/')) continue
    const file = relative(ROOT, path)
    if (file.startsWith('test/') || file.startsWith('packages/testing/') || /\/test\//.test(file)) continue
    // each process pings its database on a timer (every 5 s), whether or not a request runs
    if (file === 'packages/subgraph-server/src/database-watch.ts') continue
    // the CommonJS transform's re-export accessors (`get x`) are not the file's code
    const ran = script.functions.filter((f) => (f.ranges[0]?.count ?? 0) > 0 && !/^get( |$)/.test(f.functionName))
    if (ran.length > 0) files.add(file)
  }
  return [...files].sort()
}

/** The numbered file list under a heading of docs/architecture.md's request-path section. */
function documented(heading: string): string[] {
  const doc = readFileSync(DOC, 'utf8')
  const start = doc.indexOf(`\n${heading}\n`)
  if (start < 0) throw new Error(`docs/architecture.md has no line "${heading}"`)
  const list: string[] = []
  for (const line of doc.slice(start + heading.length + 2).split('\n')) {
    const m = /^\d+\. `([^`]+)`/.exec(line)
    if (m) list.push(m[1]!)
    else if (list.length > 0) break
  }
  return list.sort()
}

it('network.svc.payment.status: from the HTTP request to the checkout read', async () => {
  const { token } = expectOk(await initiate(stack, app, product(app.did, { paymentType: 'shop' })))
  expectOk(await paymentStatus(stack, app, token)) // warm: the DID document, the gateway's plans
  const auth = bearer(await app.jwt(STATUS)) // minted outside the measured request
  const files = await filesCrossed(async () => {
    expect(expectOk(await xrpcGet(stack, STATUS, { token }, auth))).toEqual({ status: 'pending' })
  })
  expect(files).toEqual(documented('network.svc.payment.status:'))
})

it('money.svc.app.updateConfig: from the HTTP request to the configuration written', async () => {
  expectOk(await updateConfig(stack, app, { environment: 'test', webhookUrl: receiver.url })) // warm, and the signing secret made
  const auth = bearer(await app.jwt(UPDATE_CONFIG))
  const files = await filesCrossed(async () => {
    expectOk(await xrpcPost(stack, UPDATE_CONFIG, { environment: 'test', webhookPaused: false }, auth))
  })
  expect(files).toEqual(documented('money.svc.app.updateConfig:'))
})

it('the two XRPC paths: the files they share and each one\'s own, as the doc counts them', () => {
  const status = documented('network.svc.payment.status:')
  const updateConfig = documented('money.svc.app.updateConfig:')
  const shared = status.filter((file) => updateConfig.includes(file))
  const doc = readFileSync(DOC, 'utf8').replace(/\s+/g, ' ')
  const counted = (pattern: RegExp) => Number(pattern.exec(doc)?.[1])
  expect({ shared: shared.length, status: status.length - shared.length, updateConfig: updateConfig.length - shared.length }).toEqual({
    shared: counted(/The two XRPC paths share (\d+) files/),
    status: counted(/the status path's own are (\d+)/),
    updateConfig: counted(/updateConfig's own are (\d+)/),
  })
})

it('a payment.completed delivery: from the outbox event to the receiver and the recorded outcome', async () => {
  const warm = await writeEvent(stack, { appDid: app.did })
  await waitForStatus(stack, warm.deliveryId, 'delivered')
  const files = await filesCrossed(async () => {
    const { deliveryId } = await writeEvent(stack, { appDid: app.did })
    await waitForStatus(stack, deliveryId, 'delivered')
  })
  expect(files).toEqual(documented('payment.completed delivery:'))
})
