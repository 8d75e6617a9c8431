/**
 * A request's id follows what it caused into the events workers: an app's free claim (its answer's Svc-Request-Id)
 * writes `ticket.issued` with that id in the tickets outbox; the relay carries it on the `domain-events` job, the
 * delivery keeps it, and the workers' lines of the event and of each attempt carry it as `reqId`, as every line of the
 * request itself does. So an operator following one request finds its webhook too.
 */
import { ensureSigningSecret } from '@svc/events'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectOk } from '../adapter/helpers'
import { claimAs, enableTickets, newSigner, setUpEvent, type Signer } from '../tickets/helpers'
import { startReceiver, type Receiver } from './helpers/receiver'
import { configureChannel, waitFor } from './helpers/events'

let stack: TestStack
let app: TestApp
let organizer: Signer
let receiver: Receiver
const logs: string[] = []

beforeAll(async () => {
  stack = await startStack('request-id', { allowLoopbackWebhooks: true, logs })
  app = await stack.newApp()
  await enableTickets(stack, app)
  organizer = await newSigner(stack)
  await ensureSigningSecret(stack.events, stack.secrets.webhookSecretKey, app.did, 'test')
  receiver = await startReceiver(() => ({ status: 204, body: {} }))
  await configureChannel(stack, app.did, { url: `${receiver.url}/hook` })
})
afterAll(async () => {
  await stack?.stop()
  await receiver?.close()
})

it("a claim's request id is on its ticket.issued event, its delivery, and the workers' lines of both", async () => {
  const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ name: 'Free', priceAmount: 0, currency: 'usd', capacity: 5 }])
  const claimed = await claimAs(stack, app, await newSigner(stack), { eventUri, ticketTypeId: tiers[0]!.ticketTypeId })
  const ticketId = expectOk(claimed).ticket.id as string
  const requestId = claimed.requestId!
  expect(requestId).toMatch(/^req_[0-9a-f]{32}$/)

  const event = await stack.tickets.Outbox.findOne({ type: 'ticket.issued', 'data.ticketId': ticketId }).lean()
  expect(event?.requestId).toBe(requestId)
  const delivery = await waitFor(async () => {
    const d = await stack.events.Delivery.findOne({ eventId: event!._id }).lean()
    return d?.status === 'delivered' ? d : null
  }, 'the delivery of ticket.issued')
  expect(delivery.requestId).toBe(requestId)

  const line = (msg: string, match: (l: Record<string, unknown>) => boolean) =>
    waitFor(async () => logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.msg === msg && match(l)) ?? null, `the line "${msg}"`)
  expect((await line('domain event → delivery', (l) => l.eventId === event!._id)).reqId).toBe(requestId)
  // written once the attempt's outcome is stored: after the delivery reads delivered
  expect(await line('delivery attempt', (l) => l.deliveryId === delivery._id)).toMatchObject({ reqId: requestId, outcome: 'delivered' })
})
