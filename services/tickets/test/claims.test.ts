/**
 * Free claims in the tickets domain, on its own database of the test FerretDB: a duplicate that meets its twin in
 * flight waits for the twin's ticket, whatever the twin holds that it lacks (the last seat, or the buyer's share).
 * The interleavings are set up by hand (the twin's units first, its ticket later), so each runs the same every time.
 * The app's facts are the domain's port, answered here.
 */
import { randomBytes } from 'node:crypto'
import { ContractError } from '@svc/errors'
import { announceIssued, claimFreeTicket, claimTicketId, configureTicketTiers, keepReservation, releaseReservation, reserve, sweepPendingVoids, voidTicket, type ServingTickets, type TicketsModels } from '../src'
import { claimedTicket, issue, CLAIM_ATTEMPT_SECONDS } from '../src/domain/claim-free-ticket'
import { APP, ORGANIZER, openTicketsDomain } from './helpers'

let models: TicketsModels
const clock = { now: new Date() }
let d: ServingTickets
let close: () => Promise<void>

beforeAll(async () => {
  ;({ models, d, close } = await openTicketsDomain('tickets-claims', clock))
})
afterAll(async () => {
  await close()
})

const buyer = () => `did:plc:${randomBytes(12).toString('hex')}`

async function freeTier(capacity: number) {
  const eventUri = `at://${ORGANIZER}/community.lexicon.calendar.event/${randomBytes(6).toString('hex')}`
  const configured = await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [{ name: 'Free', priceAmount: 0, currency: 'usd', capacity }] })
  const tier = (await models.Tier.findById(configured.tiers[0]!.ticketTypeId).lean())!
  return { eventUri, tier }
}

/** A twin of the claim in flight: its attempt holds the units (carrying the ticket's id); its ticket comes later. */
async function twinInFlight(eventUri: string, tier: Awaited<ReturnType<typeof freeTier>>['tier'], buyerDid: string, idempotencyKey: string) {
  const ticketId = claimTicketId({ appDid: APP, environment: 'test', eventUri, tierId: tier._id, buyerDid, idempotencyKey })
  const attempt = { id: `claim_${randomBytes(12).toString('hex')}`, expiresAt: new Date(clock.now.getTime() + CLAIM_ATTEMPT_SECONDS * 1000), buyerDid, ticketId }
  expect(await reserve(d, attempt, [{ tierId: tier._id, seatRange: tier.seatRange, quantity: 1, buyer: { did: buyerDid, perBuyerLimit: tier.perBuyerLimit } }])).toEqual({ ok: true })
  const finish = async () => {
    expect(await keepReservation(d, attempt.id)).toBe(true)
    await issue(d, claimedTicket({ ticketId, appDid: APP, environment: 'test', eventUri, tierId: tier._id, buyerDid, reservationId: attempt.id, now: clock.now }))
  }
  return { ticketId, finish }
}

/**
 * Resolves once a claim looks for its ticket a second time: it met its twin's units and waits for the twin's ticket
 * (an observer only: every read goes to the database).
 */
function waitingForTwin(ticketId: string): { reached: Promise<void>; restore: () => void } {
  let seen = 0
  let reach!: () => void
  const reached = new Promise<void>((resolve) => (reach = resolve))
  const findById = models.Ticket.findById.bind(models.Ticket)
  const spy = jest.spyOn(models.Ticket, 'findById').mockImplementation(((id: unknown, ...rest: unknown[]) => {
    if (id === ticketId && ++seen === 2) reach()
    return (findById as (...args: unknown[]) => unknown)(id, ...rest)
  }) as never)
  return { reached, restore: () => spy.mockRestore() }
}

/** A claim that meets its twin in flight: it waits (not answered) until the twin finishes, then gets the twin's ticket. */
async function claimMeetingItsTwin(eventUri: string, tier: Awaited<ReturnType<typeof freeTier>>['tier'], buyerDid: string, idempotencyKey: string) {
  const twin = await twinInFlight(eventUri, tier, buyerDid, idempotencyKey)
  const gate = waitingForTwin(twin.ticketId)
  let answered = false
  const claimed = claimFreeTicket(d, APP, { environment: 'test', eventUri, ticketTypeId: tier._id, buyerDid, idempotencyKey }).finally(() => (answered = true))
  try {
    // a claim that fails before it waits ends the race with its error, not with the test's timeout
    await Promise.race([gate.reached, claimed])
  } finally {
    gate.restore()
  }
  expect(answered).toBe(false)
  await twin.finish()
  expect((await claimed).id).toBe(twin.ticketId)
}

test('a duplicate that finds the last seat held by its twin in flight gets the twin\'s ticket, not TicketHoldUnavailable', async () => {
  const { eventUri, tier } = await freeTier(1)
  const buyerDid = buyer()
  await claimMeetingItsTwin(eventUri, tier, buyerDid, 'last')
  expect(await models.Ticket.countDocuments({ tierId: tier._id })).toBe(1)
  // another buyer is told it is sold out
  const other = await claimFreeTicket(d, APP, { environment: 'test', eventUri, ticketTypeId: tier._id, buyerDid: buyer(), idempotencyKey: 'last' }).catch((e: unknown) => e)
  expect(other).toBeInstanceOf(ContractError)
  expect((other as ContractError).code).toBe('TicketHoldUnavailable')
})

test('a duplicate that finds the buyer\'s share held by its twin in flight gets the twin\'s ticket', async () => {
  const { eventUri, tier } = await freeTier(5)
  const buyerDid = buyer()
  await claimMeetingItsTwin(eventUri, tier, buyerDid, 'share')
  expect(await models.Ticket.countDocuments({ tierId: tier._id })).toBe(1)
})

test('a retry gets the ticket its key issued even after the organizer made the tier paid or ended its sale', async () => {
  const { eventUri, tier } = await freeTier(5)
  const buyerDid = buyer()
  const claim = () => claimFreeTicket(d, APP, { environment: 'test', eventUri, ticketTypeId: tier._id, buyerDid, idempotencyKey: 'retry' })
  const first = await claim()
  const tierNow = (changes: object) => ({ ticketTypeId: tier._id, name: 'Free', priceAmount: 0, currency: 'usd', capacity: 5, ...changes })
  await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tierNow({ priceAmount: 500 })] })
  expect(await claim()).toEqual(first)
  await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tierNow({ salesEndAt: new Date(clock.now.getTime() - 1000).toISOString() })] })
  expect(await claim()).toEqual(first)
  // a new key is refused as before
  const fresh = await claimFreeTicket(d, APP, { environment: 'test', eventUri, ticketTypeId: tier._id, buyerDid: buyer(), idempotencyKey: 'retry' }).catch((e: unknown) => e)
  expect((fresh as ContractError).code).toBe('TicketHoldUnavailable')
})

test('a claim whose seat was taken too slowly (past its attempt\'s expiry) lets it go and takes another, not keeping one the sweep may have passed', async () => {
  const { eventUri, tier } = await freeTier(3)
  const started = clock.now
  const create = models.CapacityUnit.create.bind(models.CapacityUnit)
  let slowAttempt = ''
  const slow = jest.spyOn(models.CapacityUnit, 'create').mockImplementationOnce((async (...args: Parameters<typeof create>) => {
    slowAttempt = (args[0] as { reservationId: string }).reservationId
    const written = await create(...args)
    // the unit lands a minute and more after the attempt began: the sweep may have read its minute already
    clock.now = new Date(started.getTime() + (CLAIM_ATTEMPT_SECONDS + 1) * 1000)
    return written
  }) as never)
  let claimed: Awaited<ReturnType<typeof claimFreeTicket>>
  try {
    claimed = await claimFreeTicket(d, APP, { environment: 'test', eventUri, ticketTypeId: tier._id, buyerDid: buyer(), idempotencyKey: 'slow' })
  } finally {
    slow.mockRestore()
    clock.now = started
  }
  expect(slowAttempt).toMatch(/^claim_/)
  expect(await models.ReservationOutcome.findById(slowAttempt).lean()).toMatchObject({ outcome: 'released' })
  expect(await models.CapacityUnit.countDocuments({ reservationId: slowAttempt })).toBe(0)
  const ticket = (await models.Ticket.findById(claimed.id).lean())!
  expect(ticket.reservationId).not.toBe(slowAttempt)
  expect(await models.CapacityUnit.countDocuments({ reservationId: ticket.reservationId, kind: 'seat' })).toBe(1)
})

test("a claim whose every attempt is released as lapsed before it is kept (another process's clock far ahead) answers 503 after the duplicate wait, not never", async () => {
  const { eventUri, tier } = await freeTier(5)
  const create = models.ReservationOutcome.create.bind(models.ReservationOutcome)
  let released = 0
  const spy = jest.spyOn(models.ReservationOutcome, 'create').mockImplementation((async (doc: { _id: string; outcome: string }) => {
    if (doc.outcome === 'kept' && doc._id.startsWith('claim_')) {
      released++
      await releaseReservation(d, doc._id)
    }
    return create(doc as never)
  }) as never)
  try {
    const claiming = claimFreeTicket(d, APP, { environment: 'test', eventUri, ticketTypeId: tier._id, buyerDid: buyer(), idempotencyKey: 'always-lapsed' })
    const outcome = await Promise.race([claiming.then(() => 'claimed', (err: Error) => err.message), new Promise((resolve) => setTimeout(resolve, 20_000, 'still trying'))])
    // before, the claim took and freed units without end
    expect(outcome).toBe('the claim took too long; retry')
  } finally {
    spy.mockRestore()
  }
  expect(released).toBeGreaterThan(1)
  expect(await models.CapacityUnit.countDocuments({ tierId: tier._id })).toBe(0)
  expect(await models.Ticket.countDocuments({ tierId: tier._id })).toBe(0)
}, 30_000)

test('a void racing the announcement of a ticket whose claim stopped before announcing it: the ticket ends voided, its seat back', async () => {
  const { eventUri, tier } = await freeTier(40)
  for (let i = 0; i < 30; i++) {
    const claimed = await claimFreeTicket(d, APP, { environment: 'test', eventUri, ticketTypeId: tier._id, buyerDid: buyer(), idempotencyKey: `race-${i}` })
    // as a claim that stopped between its ticket and its event leaves it
    await models.Ticket.updateOne({ _id: claimed.id }, { $set: { announced: false } })
    const ticket = (await models.Ticket.findById(claimed.id).lean())!
    await Promise.all([
      voidTicket(d, ORGANIZER, 'test', claimed.id),
      new Promise((resolve) => setTimeout(resolve, i % 6)).then(() => announceIssued(d, ticket)),
    ])
    const after = (await models.Ticket.findById(claimed.id).lean())!
    expect({ i, status: after.status }).toEqual({ i, status: 'voided' })
    expect(await models.CapacityUnit.countDocuments({ ticketId: claimed.id })).toBe(0)
  }
})

test('a void cut off after its seat returned, its ticket written back as issued by an announcement, ends voided by the sweep', async () => {
  const { eventUri, tier } = await freeTier(2)
  const claimed = await claimFreeTicket(d, APP, { environment: 'test', eventUri, ticketTypeId: tier._id, buyerDid: buyer(), idempotencyKey: 'written-back' })
  await models.Ticket.updateOne({ _id: claimed.id }, { $set: { announced: false } })
  const stale = (await models.Ticket.findById(claimed.id).lean())!
  const updateOne = models.Ticket.updateOne.bind(models.Ticket)
  let writes = 0
  const spy = jest.spyOn(models.Ticket, 'updateOne').mockImplementation((async (...args: Parameters<typeof updateOne>) => {
    if (++writes > 1) throw new Error('process stopped') // before the void's last write
    const written = await updateOne(...args)
    // an announcement that read the ticket before the void writes it back whole (FerretDB's filtered updates)
    await models.Ticket.replaceOne({ _id: claimed.id }, { ...stale, announced: true })
    return written
  }) as never)
  try {
    await expect(voidTicket(d, ORGANIZER, 'test', claimed.id)).rejects.toThrow('process stopped')
  } finally {
    spy.mockRestore()
  }
  // as the process left it: the seat back on sale, and the ticket valid
  expect(await models.CapacityUnit.countDocuments({ ticketId: claimed.id })).toBe(0)
  expect((await models.Ticket.findById(claimed.id).lean())!.status).toBe('issued')

  expect(await sweepPendingVoids(d)).toBeGreaterThanOrEqual(1)
  expect(await models.Ticket.findById(claimed.id).lean()).toMatchObject({ status: 'voided', voidPending: false })
  expect((await models.ReservationOutcome.findById(`void_${claimed.id}`).lean())!.pending).toBeUndefined()
  expect(await models.Outbox.countDocuments({ type: 'ticket.voided', 'data.ticketId': claimed.id })).toBe(1)
})

test("an announcement's write that read the ticket before a void and landed after the whole void: the announcement writes it voided again", async () => {
  const { eventUri, tier } = await freeTier(2)
  const claimed = await claimFreeTicket(d, APP, { environment: 'test', eventUri, ticketTypeId: tier._id, buyerDid: buyer(), idempotencyKey: 'outlasted' })
  await models.Ticket.updateOne({ _id: claimed.id }, { $set: { announced: false } })
  const ticket = (await models.Ticket.findById(claimed.id).lean())!
  const updateOne = models.Ticket.updateOne.bind(models.Ticket)
  let outlasted = false
  const spy = jest.spyOn(models.Ticket, 'updateOne').mockImplementation((async (...args: Parameters<typeof updateOne>) => {
    const [, update] = args as unknown as [unknown, { $set?: { announced?: boolean; status?: string } }]
    if (outlasted || update.$set?.announced !== true || update.$set.status !== undefined) return updateOne(...args)
    // the announcement's flag write: FerretDB read the ticket, then the whole void ran, then the write lands whole
    outlasted = true
    const read = (await models.Ticket.findById(claimed.id).lean())!
    await voidTicket(d, ORGANIZER, 'test', claimed.id)
    expect((await models.ReservationOutcome.findById(`void_${claimed.id}`).lean())!.pending).toBeUndefined()
    return models.Ticket.replaceOne({ _id: claimed.id }, { ...read, announced: true })
  }) as never)
  try {
    await announceIssued(d, ticket)
  } finally {
    spy.mockRestore()
  }
  expect(outlasted).toBe(true)
  // before, the ticket read issued for good, its seat on sale again and no sweep to find it
  expect(await models.Ticket.findById(claimed.id).lean()).toMatchObject({ status: 'voided', announced: true })
  expect(await models.CapacityUnit.countDocuments({ ticketId: claimed.id })).toBe(0)
  expect(await models.Outbox.countDocuments({ type: 'ticket.voided', 'data.ticketId': claimed.id })).toBe(1)
})

test('voids cut off right after their decision are finished by the sweep, each on its own: one that fails holds up no other', async () => {
  const { eventUri, tier } = await freeTier(4)
  const claim = (key: string) => claimFreeTicket(d, APP, { environment: 'test', eventUri, ticketTypeId: tier._id, buyerDid: buyer(), idempotencyKey: key })
  const [a, b] = [await claim('cut-a'), await claim('cut-b')]
  const units = (ticketId: string) => models.CapacityUnit.countDocuments({ ticketId })
  const taken = await units(a.id)
  expect(taken).toBeGreaterThan(0)
  // what a void leaves when it stops after its first write: the decision, the ticket still issued and its seat taken
  for (const t of [a, b]) await models.ReservationOutcome.create({ _id: `void_${t.id}`, outcome: 'released', at: clock.now, pending: true })
  const updateOne = models.Ticket.updateOne.bind(models.Ticket)
  const spy = jest.spyOn(models.Ticket, 'updateOne').mockImplementation(((filter: { _id?: string }, ...rest: unknown[]) => {
    if (filter._id === a.id) throw new Error('database away')
    return (updateOne as (...args: unknown[]) => unknown)(filter, ...rest)
  }) as never)
  try {
    await expect(sweepPendingVoids(d)).rejects.toThrow(/1 of \d+ pending voids failed/)
  } finally {
    spy.mockRestore()
  }
  expect((await models.Ticket.findById(b.id).lean())!.status).toBe('voided')
  expect(await units(b.id)).toBe(0)
  expect((await models.Ticket.findById(a.id).lean())!.status).toBe('issued')
  expect(await units(a.id)).toBe(taken)
  // the next run finishes it
  expect(await sweepPendingVoids(d)).toBe(1)
  expect((await models.Ticket.findById(a.id).lean())!.status).toBe('voided')
  expect(await units(a.id)).toBe(0)
})

test('voiding another organizer\'s ticket is answered as voiding a missing one, and changes nothing', async () => {
  const { eventUri, tier } = await freeTier(5)
  const claimed = await claimFreeTicket(d, APP, { environment: 'test', eventUri, ticketTypeId: tier._id, buyerDid: buyer(), idempotencyKey: 'others' })
  const answer = (ticketId: string, organizerDid = 'did:plc:anotherorganizer', environment: 'test' | 'live' = 'test') =>
    voidTicket(d, organizerDid, environment, ticketId).then(
      () => null,
      (e: unknown) => e as ContractError,
    )
  const others = await answer(claimed.id)
  const missing = await answer(`ticket_${randomBytes(12).toString('hex')}`)
  expect(others).toBeInstanceOf(ContractError)
  expect({ code: others?.code, message: others?.message }).toEqual({ code: 'NotFound', message: missing?.message })
  // in the other environment, its own organizer finds it missing too
  expect((await answer(claimed.id, ORGANIZER, 'live'))?.message).toBe(missing?.message)
  expect((await models.Ticket.findById(claimed.id).lean())!.status).toBe('issued')
})
