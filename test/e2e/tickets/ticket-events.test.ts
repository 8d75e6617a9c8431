/**
 * ticket.issued reaches the app, end to end through the real stack and workers: a free claim's ticket is announced
 * through the tickets outbox, the relay and the events workers to the app's webhook, verified by the SDK's receiver,
 * once, with the data docs/events.md documents; a retry of the claim does not announce it again; and a ticket whose
 * claim stopped before its event is announced by the sweep.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createMemoryClaimStore, createWebhookRequestHandler, type EventEnvelope } from '@svc/sdk'
import { ANNOUNCE_GRACE_MS, sweepUnannounced } from '@svc/tickets'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectOk, updateConfig } from '../adapter/helpers'
import { payByForm } from '../adapter/payment-helpers'
import { CLAIM, claimAs, enableTickets, hold, newSigner, setUpEvent } from './helpers'

let stack: TestStack
let app: TestApp
let server: Server
const handled: EventEnvelope<Record<string, unknown>>[] = []
let receive: ReturnType<typeof createWebhookRequestHandler> | undefined

async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

beforeAll(async () => {
  stack = await startStack('ticket-events', { allowLoopbackWebhooks: true })
  server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      void (async () => {
        const answer = receive ? await receive({ rawBody: Buffer.concat(chunks), headers: req.headers }) : { status: 503, body: { error: 'NotReady' } }
        res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body))
      })()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  app = await stack.newApp()
  await enableTickets(stack, app)
  const configured = expectOk(await updateConfig(stack, app, { environment: 'test', webhookUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/svc/events` }))
  receive = createWebhookRequestHandler({
    secret: configured.webhook.signingSecret,
    store: createMemoryClaimStore(),
    handlers: {
      'ticket.issued': async (envelope) => void handled.push(envelope as EventEnvelope<Record<string, unknown>>),
      'payment.completed': async (envelope) => void handled.push(envelope as EventEnvelope<Record<string, unknown>>),
    },
  })
})
afterAll(async () => {
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve))
  await stack?.stop()
})

test('a free claim announces ticket.issued to the app once; its retry does not announce it again', async () => {
  const organizer = await newSigner(stack)
  const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ name: 'Free', priceAmount: 0, currency: 'usd', capacity: 3 }])
  const buyer = await newSigner(stack)
  const assertion = await buyer.assertion(CLAIM)
  const target = { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }
  const { ticket } = expectOk(await claimAs(stack, app, buyer, target, { idempotencyKey: 'once', assertion }))
  await waitFor(() => handled.some((e) => e.data.ticketId === ticket.id), 'ticket.issued')
  expect(expectOk(await claimAs(stack, app, buyer, target, { idempotencyKey: 'once', assertion })).ticket.id).toBe(ticket.id)
  const event = handled.find((e) => e.data.ticketId === ticket.id)!
  expect(event).toMatchObject({ type: 'ticket.issued', environment: 'test', id: expect.stringMatching(/^whd_/) })
  expect(event.data).toEqual({
    ticketId: ticket.id,
    status: 'issued',
    ticketTypeId: target.ticketTypeId,
    eventUri,
    buyerDid: buyer.did,
    source: 'claim',
    issuedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
  })
  await new Promise((r) => setTimeout(r, 500))
  expect(handled.filter((e) => e.data.ticketId === ticket.id)).toHaveLength(1)
  expect(await stack.tickets.Outbox.countDocuments({ type: 'ticket.issued', 'data.ticketId': ticket.id })).toBe(1)
})

test('a paid hold announces each of its tickets, with the hold and the app\'s order id, and its payment.completed carries the hold', async () => {
  const organizer = await newSigner(stack)
  const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ name: 'Paid', priceAmount: 1800, currency: 'usd', capacity: 3 }])
  const held = expectOk(await hold(stack, app, { eventUri, buyerDid: 'did:plc:payer0000000000000000000', appOrderId: 'cart-42', items: [{ ticketTypeId: tiers[0]!.ticketTypeId, quantity: 2 }] }))
  expect((await payByForm(held.checkout.url, '4242 4242 4242 4242')).status).toBe(303)
  const ofHold = () => handled.filter((e) => e.data.holdId === held.holdId)
  await waitFor(() => ofHold().length === 3, 'two ticket.issued and one payment.completed')
  const issued = ofHold().filter((e) => e.type === 'ticket.issued')
  expect(issued).toHaveLength(2)
  for (const e of issued) {
    expect(e.data).toEqual({
      ticketId: expect.stringMatching(/^ticket_[0-9a-f]{24}$/),
      status: 'issued',
      ticketTypeId: tiers[0]!.ticketTypeId,
      eventUri,
      buyerDid: 'did:plc:payer0000000000000000000',
      source: 'purchase',
      issuedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      holdId: held.holdId,
      appOrderId: 'cart-42',
    })
  }
  expect(ofHold().find((e) => e.type === 'payment.completed')!.data).toMatchObject({ paymentType: 'ticket', appOrderId: held.holdId, holdId: held.holdId, amount: 3600 })
})

test('the sweep announces a ticket whose claim stopped before writing its event', async () => {
  const organizer = await newSigner(stack)
  const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ name: 'Free', priceAmount: 0, currency: 'usd', capacity: 3 }])
  const buyer = await newSigner(stack)
  // as a claim that died between inserting its ticket and writing its event leaves it: not announced, no event
  const stopped = {
    _id: `ticket_${'a'.repeat(24)}`,
    appDid: app.did,
    environment: 'test' as const,
    eventUri,
    tierId: tiers[0]!.ticketTypeId,
    buyerDid: buyer.did,
    reservationId: `claim_${'b'.repeat(24)}`,
    status: 'issued' as const,
    source: 'claim',
    announced: false,
  }
  await stack.tickets.Ticket.create({ ...stopped, createdAt: new Date(Date.now() - ANNOUNCE_GRACE_MS - 1000) })
  await stack.tickets.Ticket.create({ ...stopped, _id: `ticket_${'c'.repeat(24)}`, createdAt: new Date() })

  expect(await sweepUnannounced({ models: stack.tickets })).toBe(1)
  await waitFor(() => handled.some((e) => e.data.ticketId === stopped._id), 'the swept ticket.issued')
  expect((await stack.tickets.Ticket.findById(stopped._id).lean())?.announced).toBe(true)
  // a younger one is left to its claim
  expect((await stack.tickets.Ticket.findById(`ticket_${'c'.repeat(24)}`).lean())?.announced).toBe(false)
  expect(await sweepUnannounced({ models: stack.tickets })).toBe(0)
})
