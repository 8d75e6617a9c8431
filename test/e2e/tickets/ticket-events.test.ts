/**
 * ticket.issued reaches the app, end to end through the real stack and workers: a free claim's ticket is announced
 * through the tickets outbox, the relay and the events workers to the app's webhook, verified by the SDK's receiver,
 * once, with the data docs/events.md documents; a retry of the claim does not announce it again; a ticket whose
 * claim stopped before its event is announced by the sweep; and a claim that stopped after keeping its seat and
 * before inserting its ticket is finished by the sweep.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createMemoryClaimStore, createWebhookRequestHandler, type EventEnvelope } from '@svc/sdk'
import { randomBytes } from 'node:crypto'
import { ANNOUNCE_GRACE_MS, CLAIM_ATTEMPT_SECONDS, claimTicketId, CLOCKS_APART_MS, KEPT_UNTIL, keepReservation, minuteOf, reserve, STOPPED_CLAIM_MINUTES_PER_RUN, sweepPendingVoids, sweepStoppedClaims, sweepUnannounced, voidTicket } from '@svc/tickets'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectOk, updateConfig } from '../adapter/helpers'
import { payByForm } from '../adapter/payment-helpers'
import { availability, CLAIM, claimAs, enableTickets, hold, newSigner, setUpEvent } from './helpers'

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
      'ticket.voided': async (envelope) => void handled.push(envelope as EventEnvelope<Record<string, unknown>>),
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

  expect(await sweepUnannounced(stack.ticketsDomain)).toBe(1)
  await waitFor(() => handled.some((e) => e.data.ticketId === stopped._id), 'the swept ticket.issued')
  expect((await stack.tickets.Ticket.findById(stopped._id).lean())?.announced).toBe(true)
  // a younger one is left to its claim
  expect((await stack.tickets.Ticket.findById(`ticket_${'c'.repeat(24)}`).lean())?.announced).toBe(false)
  expect(await sweepUnannounced(stack.ticketsDomain)).toBe(0)
})

describe('voids', () => {
  async function claimedTicket(capacity: number) {
    const organizer = await newSigner(stack)
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ name: 'Free', priceAmount: 0, currency: 'usd', capacity }])
    const buyer = await newSigner(stack)
    const { ticket } = expectOk(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }, { idempotencyKey: 'void' }))
    await waitFor(() => handled.some((e) => e.type === 'ticket.issued' && e.data.ticketId === ticket.id), 'ticket.issued')
    return { organizer, eventUri, ticketId: ticket.id as string }
  }
  const available = async (eventUri: string) => expectOk(await availability(stack, app, { eventUri })).items[0].available
  const eventsOf = (ticketId: string, type: string) => handled.filter((e) => e.type === type && e.data.ticketId === ticketId)

  test('a void cut off after its ticket became voided keeps the seat out of sale; the sweep returns it once and tells the app', async () => {
    const { eventUri, ticketId } = await claimedTicket(2)
    expect(await available(eventUri)).toBe(1)
    // what a void leaves when it stops right after its first two writes: the decision, and the ticket voided
    const voidedAt = new Date()
    await stack.tickets.ReservationOutcome.create({ _id: `void_${ticketId}`, outcome: 'released', at: voidedAt, pending: true })
    await stack.tickets.Ticket.updateOne({ _id: ticketId }, { $set: { status: 'voided', voidedAt, voidPending: true } })
    expect(await available(eventUri)).toBe(1)

    expect(await sweepPendingVoids(stack.ticketsDomain)).toBe(1)
    expect(await available(eventUri)).toBe(2)
    expect(await stack.tickets.Ticket.findById(ticketId).lean()).toMatchObject({ status: 'voided', voidPending: false })
    expect((await stack.tickets.ReservationOutcome.findById(`void_${ticketId}`).lean())!.pending).toBeUndefined()
    await waitFor(() => eventsOf(ticketId, 'ticket.voided').length > 0, 'ticket.voided')
    expect(eventsOf(ticketId, 'ticket.voided')[0]!.data.voidedAt).toBe(voidedAt.toISOString())
    expect(await sweepPendingVoids(stack.ticketsDomain)).toBe(0)
    await new Promise((r) => setTimeout(r, 300))
    expect(eventsOf(ticketId, 'ticket.voided')).toHaveLength(1)
    expect(await available(eventUri)).toBe(2)
  })

  test('a ticket whose claim stopped before announcing it, voided: the app gets its ticket.issued, then its ticket.voided, and the sweep announces nothing more', async () => {
    const organizer = await newSigner(stack)
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ name: 'Free', priceAmount: 0, currency: 'usd', capacity: 2 }])
    const buyer = await newSigner(stack)
    const ticketId = `ticket_${randomBytes(12).toString('hex')}`
    const createdAt = new Date(Date.now() - ANNOUNCE_GRACE_MS - 1000)
    await stack.tickets.Ticket.create({ _id: ticketId, appDid: app.did, environment: 'test', eventUri, tierId: tiers[0]!.ticketTypeId, buyerDid: buyer.did, reservationId: `claim_${randomBytes(12).toString('hex')}`, status: 'issued', source: 'claim', announced: false, createdAt })

    expect(await voidTicket(stack.ticketsDomain, organizer.did, 'test', ticketId)).toEqual({ id: ticketId, status: 'voided' })
    // deliveries are not ordered: both are waited for
    await waitFor(() => eventsOf(ticketId, 'ticket.voided').length > 0 && eventsOf(ticketId, 'ticket.issued').length > 0, 'ticket.issued and ticket.voided')
    const [issued] = eventsOf(ticketId, 'ticket.issued')
    expect(issued!.data.issuedAt).toBe(createdAt.toISOString())
    expect(Date.parse(issued!.createdAt)).toBeLessThanOrEqual(Date.parse(eventsOf(ticketId, 'ticket.voided')[0]!.createdAt))
    expect(await stack.tickets.Ticket.findById(ticketId).lean()).toMatchObject({ status: 'voided', announced: true, voidPending: false })
    expect(await sweepUnannounced(stack.ticketsDomain)).toBe(0)
    expect(await stack.tickets.Outbox.countDocuments({ 'data.ticketId': ticketId })).toBe(2)
  })
})

describe('a free claim that stopped after keeping its seat and before inserting its ticket', () => {
  /**
   * What such a claim leaves: its attempt's seat and share, kept, carrying the ticket's id, and no ticket. Taken in
   * the past by a clock, so the sweep's cursor is put back to where it stood then (before the claim's minute).
   */
  async function stoppedClaim(tierId: string, ticketId: string, buyerDid: string, ageSeconds: number, stoppedAt: 'kept' | 'decided' | 'taken' = 'kept') {
    const tier = (await stack.tickets.Tier.findById(tierId).lean())!
    const then = { ...stack.ticketsDomain, now: () => new Date(Date.now() - ageSeconds * 1000) }
    await stack.tickets.SweepCursor.updateOne({ _id: 'stopped-claims' }, { $min: { minute: minuteOf(then.now()) - 1 } }, { upsert: true })
    const id = `claim_${randomBytes(12).toString('hex')}`
    const taken = await reserve(then, { id, expiresAt: new Date(then.now().getTime() + CLAIM_ATTEMPT_SECONDS * 1000), buyerDid, ticketId }, [
      { tierId, seatRange: tier.seatRange, quantity: 1, buyer: { did: buyerDid, perBuyerLimit: tier.perBuyerLimit } },
    ])
    expect(taken).toEqual({ ok: true })
    // 'decided': stopped between the keep's decision and marking the units kept; 'taken': before deciding
    if (stoppedAt === 'kept') expect(await keepReservation(then, id)).toBe(true)
    if (stoppedAt === 'decided') await stack.tickets.ReservationOutcome.create({ _id: id, outcome: 'kept', at: then.now() })
    return id
  }

  /** The last minute whose attempts are all older than CLAIM_ATTEMPT_SECONDS, by any clock up to CLOCKS_APART_MS behind. */
  const settledMinute = () => minuteOf(Date.now() - CLAIM_ATTEMPT_SECONDS * 1000 - CLOCKS_APART_MS) - 1
  async function expectCursorBetween(low: number, high: number) {
    const { minute } = (await stack.tickets.SweepCursor.findById('stopped-claims').lean())!
    expect(minute).toBeGreaterThanOrEqual(low)
    expect(minute).toBeLessThanOrEqual(high)
  }

  /** A free tier of a new event, a buyer, and the id of the buyer's claim under `key`. */
  async function freeTier(tier: { capacity: number; perBuyerLimit?: number }, key: string) {
    const organizer = await newSigner(stack)
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ name: 'Free', priceAmount: 0, currency: 'usd', ...tier }])
    const tierId = tiers[0]!.ticketTypeId as string
    const buyer = await newSigner(stack)
    const ticketId = claimTicketId({ appDid: app.did, environment: 'test', eventUri, tierId, buyerDid: buyer.did, idempotencyKey: key })
    return { eventUri, tierId, buyer, ticketId }
  }

  test('one stopped claim the sweep fails to finish holds up no other: the others are issued, the cursor stays, the next run issues it', async () => {
    const a = await freeTier({ capacity: 2 }, 'stopped-a')
    const b = await freeTier({ capacity: 2 }, 'stopped-b')
    // five minutes older than due: the cursor stands at least two minutes behind where a whole run leaves it
    await stoppedClaim(a.tierId, a.ticketId, a.buyer.did, CLAIM_ATTEMPT_SECONDS + 300)
    await stoppedClaim(b.tierId, b.ticketId, b.buyer.did, CLAIM_ATTEMPT_SECONDS + 300)
    const findById = stack.tickets.Tier.findById.bind(stack.tickets.Tier)
    const away = jest.spyOn(stack.tickets.Tier, 'findById').mockImplementation(((id: unknown, ...rest: unknown[]) => {
      if (id === a.tierId) throw new Error('database away')
      return (findById as (...args: unknown[]) => unknown)(id, ...rest)
    }) as never)
    try {
      await expect(sweepStoppedClaims(stack.ticketsDomain)).rejects.toThrow(/^1 of \d+ stopped claims failed/)
    } finally {
      away.mockRestore()
    }
    expect(await stack.tickets.Ticket.countDocuments({ _id: b.ticketId })).toBe(1)
    expect(await stack.tickets.Ticket.countDocuments({ _id: a.ticketId })).toBe(0)
    // the run that failed an item leaves the cursor where it was, so the failed claim's minute is read again
    await expectCursorBetween(0, settledMinute() - 2)
    expect((await sweepStoppedClaims(stack.ticketsDomain)).issued).toBeGreaterThanOrEqual(1)
    expect(await stack.tickets.Ticket.countDocuments({ _id: a.ticketId })).toBe(1)
  })

  test('the sweep issues and announces its ticket; the retry with the same key gets it; a younger one is left to its claim', async () => {
    const { eventUri, tierId, buyer, ticketId } = await freeTier({ capacity: 3 }, 'stopped')
    const attempt = await stoppedClaim(tierId, ticketId, buyer.did, CLAIM_ATTEMPT_SECONDS + 5)
    const young = await newSigner(stack)
    const youngTicketId = claimTicketId({ appDid: app.did, environment: 'test', eventUri, tierId, buyerDid: young.did, idempotencyKey: 'young' })
    await stoppedClaim(tierId, youngTicketId, young.did, 1)
    expect(expectOk(await availability(stack, app, { eventUri })).items[0].available).toBe(1)

    expect(await sweepStoppedClaims(stack.ticketsDomain)).toEqual({ issued: 1, released: 0 })
    const ticket = (await stack.tickets.Ticket.findById(ticketId).lean())!
    expect(ticket).toMatchObject({ status: 'issued', source: 'claim', reservationId: attempt, buyerDid: buyer.did, eventUri, tierId, announced: true })
    await waitFor(() => handled.some((e) => e.type === 'ticket.issued' && e.data.ticketId === ticketId), 'the swept claim\'s ticket.issued')
    expect(await stack.tickets.Ticket.countDocuments({ _id: youngTicketId })).toBe(0)
    expect(await sweepStoppedClaims(stack.ticketsDomain)).toEqual({ issued: 0, released: 0 })

    const retried = expectOk(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tierId }, { idempotencyKey: 'stopped' }))
    expect(retried.ticket.id).toBe(ticketId)
    expect(expectOk(await availability(stack, app, { eventUri })).items[0].available).toBe(1)
    expect(handled.filter((e) => e.type === 'ticket.issued' && e.data.ticketId === ticketId)).toHaveLength(1)
    // the younger one's retry finishes it (so no later sweep here meets it)
    expect(expectOk(await claimAs(stack, app, young, { eventUri, ticketTypeId: tierId }, { idempotencyKey: 'young' })).ticket.id).toBe(youngTicketId)
  })

  test("a claim stopped in a tickets process whose clock is two minutes behind the sweep's is finished too", async () => {
    const { tierId, buyer, ticketId } = await freeTier({ capacity: 2 }, 'behind')
    await sweepStoppedClaims(stack.ticketsDomain) // the cursor where a run leaves it, by this clock
    // the other process stamps its claim's minute by its clock, CLOCKS_APART_MS behind (the helper puts the cursor
    // back for claims of the past; this one is of the present, so the cursor is left where the run put it)
    const cursor = (await stack.tickets.SweepCursor.findById('stopped-claims').lean())!.minute
    const behind = { ...stack.ticketsDomain, now: () => new Date(Date.now() - CLOCKS_APART_MS) }
    const id = `claim_${randomBytes(12).toString('hex')}`
    const tier = (await stack.tickets.Tier.findById(tierId).lean())!
    const taken = await reserve(behind, { id, expiresAt: new Date(behind.now().getTime() + CLAIM_ATTEMPT_SECONDS * 1000), buyerDid: buyer.did, ticketId }, [
      { tierId, seatRange: tier.seatRange, quantity: 1, buyer: { did: buyer.did, perBuyerLimit: tier.perBuyerLimit } },
    ])
    expect(taken).toEqual({ ok: true })
    expect(await keepReservation(behind, id)).toBe(true)
    expect((await stack.tickets.SweepCursor.findById('stopped-claims').lean())!.minute).toBe(cursor)
    // its attempt is due by the sweep's clock once CLAIM_ATTEMPT_SECONDS have passed by the other's: at once here
    expect(CLOCKS_APART_MS).toBeGreaterThan(CLAIM_ATTEMPT_SECONDS * 1000)
    expect(await sweepStoppedClaims(stack.ticketsDomain)).toEqual({ issued: 1, released: 0 })
    expect((await stack.tickets.Ticket.findById(ticketId).lean())!).toMatchObject({ status: 'issued', reservationId: id })
  })

  test('before any sweep, the retry with the same key adopts the kept seat: no second seat is taken', async () => {
    const { eventUri, tierId, buyer, ticketId } = await freeTier({ capacity: 2 }, 'adopt')
    const attempt = await stoppedClaim(tierId, ticketId, buyer.did, 1)
    const retried = expectOk(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tierId }, { idempotencyKey: 'adopt' }))
    expect(retried.ticket.id).toBe(ticketId)
    expect((await stack.tickets.Ticket.findById(ticketId).lean())!.reservationId).toBe(attempt)
    expect(expectOk(await availability(stack, app, { eventUri })).items[0].available).toBe(1)
  })

  test('the retry adopts the kept seat whatever the organizer changed since: the sale ended, the tier made paid', async () => {
    // stopped between the keep's decision and marking its units (they carry the attempt's expiry, now past)
    const ended = await freeTier({ capacity: 2 }, 'ended')
    const decided = await stoppedClaim(ended.tierId, ended.ticketId, ended.buyer.did, CLAIM_ATTEMPT_SECONDS + 5, 'decided')
    await stack.tickets.Tier.updateOne({ _id: ended.tierId }, { $set: { salesEndAt: new Date(Date.now() - 1000) } })
    const late = expectOk(await claimAs(stack, app, ended.buyer, { eventUri: ended.eventUri, ticketTypeId: ended.tierId }, { idempotencyKey: 'ended' }))
    expect(late.ticket.id).toBe(ended.ticketId)
    expect((await stack.tickets.Ticket.findById(ended.ticketId).lean())!.reservationId).toBe(decided)

    const priced = await freeTier({ capacity: 2 }, 'priced')
    const kept = await stoppedClaim(priced.tierId, priced.ticketId, priced.buyer.did, 1)
    await stack.tickets.Tier.updateOne({ _id: priced.tierId }, { $set: { priceAmount: 500 } })
    const paid = expectOk(await claimAs(stack, app, priced.buyer, { eventUri: priced.eventUri, ticketTypeId: priced.tierId }, { idempotencyKey: 'priced' }))
    expect(paid.ticket.id).toBe(priced.ticketId)
    expect((await stack.tickets.Ticket.findById(priced.ticketId).lean())!.reservationId).toBe(kept)
  })

  test('two stopped attempts of one claim: one gets the ticket, the other\'s seat returns to sale', async () => {
    const { eventUri, tierId, buyer, ticketId } = await freeTier({ capacity: 3, perBuyerLimit: 2 }, 'twice')
    const attempts = [await stoppedClaim(tierId, ticketId, buyer.did, CLAIM_ATTEMPT_SECONDS + 5), await stoppedClaim(tierId, ticketId, buyer.did, CLAIM_ATTEMPT_SECONDS + 5)]
    expect(expectOk(await availability(stack, app, { eventUri })).items[0].available).toBe(1)

    expect(await sweepStoppedClaims(stack.ticketsDomain)).toEqual({ issued: 1, released: 1 })
    const ticket = (await stack.tickets.Ticket.findById(ticketId).lean())!
    expect(attempts).toContain(ticket.reservationId)
    const other = attempts.find((a) => a !== ticket.reservationId)!
    expect(await stack.tickets.CapacityUnit.countDocuments({ reservationId: other })).toBe(0)
    expect(await stack.tickets.CapacityUnit.countDocuments({ reservationId: ticket.reservationId })).toBe(2)
    expect(expectOk(await availability(stack, app, { eventUri })).items[0].available).toBe(2)
    expect(await sweepStoppedClaims(stack.ticketsDomain)).toEqual({ issued: 0, released: 0 })
  })

  test('two stopped attempts, and a retry adopting one while the sweep issues the other: the ticket keeps its seat', async () => {
    const { eventUri, tierId, buyer, ticketId } = await freeTier({ capacity: 3, perBuyerLimit: 2 }, 'raced')
    const attempts = [await stoppedClaim(tierId, ticketId, buyer.did, CLAIM_ATTEMPT_SECONDS + 5), await stoppedClaim(tierId, ticketId, buyer.did, CLAIM_ATTEMPT_SECONDS + 5)]
    // just before the sweep's insert, the claim's retry inserts the ticket with the other attempt's seat
    let raced = false
    const Ticket = new Proxy(stack.tickets.Ticket, {
      get: (target, prop, receiver) =>
        prop !== 'create'
          ? Reflect.get(target, prop, receiver)
          : async (doc: { reservationId: string }) => {
            if (!raced) {
              raced = true
              await target.create({ ...doc, reservationId: attempts.find((a) => a !== doc.reservationId) })
            }
            return target.create(doc)
          },
    })
    await sweepStoppedClaims({ ...stack.ticketsDomain, models: { ...stack.tickets, Ticket } })
    expect(raced).toBe(true)
    const ticket = (await stack.tickets.Ticket.findById(ticketId).lean())!
    // its seat and its buyer's share stay; the other attempt's go
    expect(await stack.tickets.CapacityUnit.countDocuments({ reservationId: ticket.reservationId })).toBe(2)
    expect(await stack.tickets.CapacityUnit.countDocuments({ reservationId: attempts.find((a) => a !== ticket.reservationId) })).toBe(0)
    expect(expectOk(await availability(stack, app, { eventUri })).items[0].available).toBe(2)
  })

  test('the sweep reads each minute once, by equality, and moves its cursor past the minutes it finished', async () => {
    const { tierId, buyer, ticketId } = await freeTier({ capacity: 2 }, 'minute')
    const attempt = await stoppedClaim(tierId, ticketId, buyer.did, CLAIM_ATTEMPT_SECONDS + 5)
    const minute = (await stack.tickets.CapacityUnit.findOne({ reservationId: attempt, kind: 'seat' }).lean())!.claimMinute!
    expect(minute).toBe(minuteOf((await stack.tickets.CapacityUnit.findOne({ reservationId: attempt }).lean())!.createdAt))

    const before = settledMinute()
    // the sweep's own reads of the units, observed (each still goes to the database)
    const filters: Record<string, unknown>[] = []
    const find = stack.tickets.CapacityUnit.find.bind(stack.tickets.CapacityUnit)
    const spy = jest.spyOn(stack.tickets.CapacityUnit, 'find').mockImplementation(((filter: Record<string, unknown>, ...rest: unknown[]) => {
      filters.push(filter)
      return (find as (...args: unknown[]) => unknown)(filter, ...rest)
    }) as never)
    try {
      expect(await sweepStoppedClaims(stack.ticketsDomain)).toEqual({ issued: 1, released: 0 })
    } finally {
      spy.mockRestore()
    }
    await expectCursorBetween(before, settledMinute())
    // each minute read once, by equality
    const minuteReads = filters.filter((f) => 'claimMinute' in f)
    expect(minuteReads.every((f) => typeof f.claimMinute === 'number')).toBe(true)
    expect(minuteReads.filter((f) => f.claimMinute === minute)).toHaveLength(1)
    expect(new Set(minuteReads.map((f) => f.claimMinute)).size).toBe(minuteReads.length)
    // what makes it cheap on FerretDB: such a query goes to PostgreSQL, not the whole collection to the sweep
    const explain = (await stack.tickets.CapacityUnit.collection.find({ claimMinute: minute, kind: 'seat' }).explain()) as { filterPushdown?: boolean }
    expect(explain.filterPushdown).toBe(true)

    // a stopped claim whose minute the cursor has passed is not read again (nor is the finished one)
    const late = await freeTier({ capacity: 2 }, 'late')
    await stoppedClaim(late.tierId, late.ticketId, late.buyer.did, CLAIM_ATTEMPT_SECONDS + 5)
    await stack.tickets.SweepCursor.updateOne({ _id: 'stopped-claims' }, { $set: { minute: minuteOf(Date.now()) } })
    expect(await sweepStoppedClaims(stack.ticketsDomain)).toEqual({ issued: 0, released: 0 })
    expect(await stack.tickets.Ticket.countDocuments({ _id: late.ticketId })).toBe(0)
    // put back before its minute, the cursor is all it took
    await stack.tickets.SweepCursor.updateOne({ _id: 'stopped-claims' }, { $set: { minute: minuteOf(Date.now() - (CLAIM_ATTEMPT_SECONDS + 5) * 1000) - 1 } })
    expect(await sweepStoppedClaims(stack.ticketsDomain)).toEqual({ issued: 1, released: 0 })
    expect(await stack.tickets.Ticket.countDocuments({ _id: late.ticketId })).toBe(1)
  })

  test('after the sweep was stopped for more than a day, it catches up on every minute missed, a bounded stretch per run', async () => {
    const { eventUri, tierId, buyer, ticketId } = await freeTier({ capacity: 2 }, 'long-stop')
    // the claim stopped 25 h ago, and no sweep has run since the minute before it
    const attempt = await stoppedClaim(tierId, ticketId, buyer.did, 25 * 60 * 60)
    const start = (await stack.tickets.SweepCursor.findById('stopped-claims').lean())!.minute
    let issued = 0
    let runs = 0
    for (let last = start; last < settledMinute(); runs++) {
      issued += (await sweepStoppedClaims(stack.ticketsDomain)).issued
      const { minute } = (await stack.tickets.SweepCursor.findById('stopped-claims').lean())!
      expect(minute).toBeLessThanOrEqual(last + STOPPED_CLAIM_MINUTES_PER_RUN)
      expect(minute).toBeGreaterThan(last)
      last = minute
    }
    expect(runs).toBeGreaterThan(1)
    expect(issued).toBe(1)
    expect((await stack.tickets.Ticket.findById(ticketId).lean())!).toMatchObject({ status: 'issued', reservationId: attempt })
    expect(expectOk(await availability(stack, app, { eventUri })).items[0].available).toBe(1)
  })

  test('one stopped between deciding to keep its seat and marking it kept is finished too; one stopped before deciding returns its seat', async () => {
    const decided = await freeTier({ capacity: 2 }, 'decided')
    const attempt = await stoppedClaim(decided.tierId, decided.ticketId, decided.buyer.did, CLAIM_ATTEMPT_SECONDS + 5, 'decided')
    const undecided = await freeTier({ capacity: 2 }, 'undecided')
    const lapsed = await stoppedClaim(undecided.tierId, undecided.ticketId, undecided.buyer.did, CLAIM_ATTEMPT_SECONDS + 5, 'taken')
    // no read of either tier comes first: the sweep alone ends both
    expect(await sweepStoppedClaims(stack.ticketsDomain)).toEqual({ issued: 1, released: 0 })
    expect((await stack.tickets.Ticket.findById(decided.ticketId).lean())!).toMatchObject({ status: 'issued', reservationId: attempt })
    const kept = await stack.tickets.CapacityUnit.find({ reservationId: attempt }).lean()
    expect(kept.map((u) => u.expiresAt)).toEqual([KEPT_UNTIL, KEPT_UNTIL])
    expect(await stack.tickets.CapacityUnit.countDocuments({ reservationId: lapsed })).toBe(0)
    expect(await stack.tickets.Ticket.countDocuments({ _id: undecided.ticketId })).toBe(0)
    expect(expectOk(await availability(stack, app, { eventUri: decided.eventUri })).items[0].available).toBe(1)
    expect(expectOk(await availability(stack, app, { eventUri: undecided.eventUri })).items[0].available).toBe(2)
  })

  test('with no cursor, the first sweep reads the last day by age, units taken before they carried their minute included', async () => {
    const { tierId, buyer, ticketId } = await freeTier({ capacity: 2 }, 'first')
    const attempt = await stoppedClaim(tierId, ticketId, buyer.did, CLAIM_ATTEMPT_SECONDS + 5)
    await stack.tickets.CapacityUnit.updateMany({ reservationId: attempt }, { $set: { claimMinute: null } })
    await stack.tickets.SweepCursor.deleteMany({})

    const before = settledMinute()
    expect(await sweepStoppedClaims(stack.ticketsDomain)).toEqual({ issued: 1, released: 0 })
    expect((await stack.tickets.Ticket.findById(ticketId).lean())!.reservationId).toBe(attempt)
    await expectCursorBetween(before, settledMinute())
  })
})
