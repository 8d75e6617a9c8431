/**
 * Holds in the tickets domain, on its own database of the test FerretDB with a clock the test moves: all items or
 * none, per-buyer limits, the order-id idempotency under concurrent duplicates, expiry returning the capacity exactly
 * once, and no oversell when a thousand holds race for 100 seats while holds lapse and their seats are sold again.
 * The app's facts (environment, tickets module) are the domain's port, answered here.
 */
import { randomBytes } from 'node:crypto'
import pino from 'pino'
import { ContractError } from '@svc/errors'
import { availableSeats, configureTicketTiers, reserve, voidTicket, type ServingTickets, type TicketsModels } from '../src'
import { secureHold, settleHold } from '../src/domain/hold-payment'
import { purchaseTicketIds } from '../src/domain/ids'
import { abandonHoldAttempt, createTicketHold, HOLD_ATTEMPT_SECONDS, holdTickets, type HoldRequest } from '../src/domain/create-hold'
import type { HoldCheckouts } from '../src/domain/context'
import { APP, ORGANIZER, openTicketsDomain } from './helpers'

let models: TicketsModels
const clock = { now: new Date() }
let d: ServingTickets
let close: () => Promise<void>

beforeAll(async () => {
  // holdTickets only reserves; the checkout (payments) is tested through the stack (test/e2e/tickets)
  ;({ models, d, close } = await openTicketsDomain('tickets-holds', clock))
})
afterAll(async () => {
  await close()
})

const buyer = () => `did:plc:${randomBytes(12).toString('hex')}`

async function event(tiers: { capacity: number; priceAmount?: number; perBuyerLimit?: number; currency?: string }[], holdDurationSeconds = 600) {
  const eventUri = `at://${ORGANIZER}/community.lexicon.calendar.event/${randomBytes(6).toString('hex')}`
  const configured = await configureTicketTiers(d, APP, {
    environment: 'test',
    eventUri,
    organizerDid: ORGANIZER,
    holdDurationSeconds,
    tiers: tiers.map((t, i) => ({ name: `Tier ${i}`, priceAmount: t.priceAmount ?? 2500, currency: t.currency ?? 'usd', capacity: t.capacity, perBuyerLimit: t.perBuyerLimit })),
  })
  return { eventUri, tierIds: configured.tiers.map((t) => t.ticketTypeId) }
}

const hold = (eventUri: string, items: HoldRequest['items'], over: Partial<HoldRequest> = {}) =>
  holdTickets(d, APP, { environment: 'test', eventUri, buyerDid: over.buyerDid ?? buyer(), appOrderId: over.appOrderId ?? randomBytes(6).toString('hex'), items, ...over })

async function available(tierId: string): Promise<number> {
  return availableSeats(d, (await models.Tier.findById(tierId).lean())!)
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(() => null, (e: unknown) => e)
  expect(err).toBeInstanceOf(ContractError)
  return (err as ContractError).code
}

test('a hold takes every item or none, prices them, and answers its expiry', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 5, priceAmount: 2500 }, { capacity: 1, priceAmount: 9900 }])
  const [general, vip] = tierIds as [string, string]
  const held = await hold(eventUri, [{ ticketTypeId: general, quantity: 2 }, { ticketTypeId: vip, quantity: 1 }])
  expect(held).toEqual({ holdId: expect.stringMatching(/^hold_[0-9a-f]{24}$/), expiresAt: new Date(clock.now.getTime() + 600_000).toISOString(), amount: 2 * 2500 + 9900, currency: 'usd', items: [{ ticketTypeId: general, quantity: 2 }, { ticketTypeId: vip, quantity: 1 }] })
  expect([await available(general), await available(vip)]).toEqual([3, 0])
  // the VIP seat is gone: this hold is refused whole, and its general seats are not taken
  expect(await refusal(hold(eventUri, [{ ticketTypeId: general, quantity: 1 }, { ticketTypeId: vip, quantity: 1 }]))).toBe('TicketHoldUnavailable')
  expect([await available(general), await available(vip)]).toEqual([3, 0])
})

test('refuses free tiers, mixed currencies, unknown tiers and bad quantities, changing nothing', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 5, priceAmount: 0 }, { capacity: 5, currency: 'eur' }, { capacity: 5 }])
  const [free, euro, dollar] = tierIds as [string, string, string]
  expect(await refusal(hold(eventUri, [{ ticketTypeId: free, quantity: 1 }]))).toBe('InvalidRequest')
  expect(await refusal(hold(eventUri, [{ ticketTypeId: euro, quantity: 1 }, { ticketTypeId: dollar, quantity: 1 }]))).toBe('InvalidRequest')
  expect(await refusal(hold(eventUri, [{ ticketTypeId: `tier_${'0'.repeat(24)}`, quantity: 1 }]))).toBe('InvalidRequest')
  expect(await refusal(hold(eventUri, [{ ticketTypeId: dollar, quantity: 0 }]))).toBe('InvalidRequest')
  expect(await refusal(hold(eventUri, [{ ticketTypeId: dollar, quantity: 1 }, { ticketTypeId: dollar, quantity: 1 }]))).toBe('InvalidRequest')
  expect([await available(euro), await available(dollar)]).toEqual([5, 5])
})

test('a buyer holds at most the tier\'s per-buyer limit at once', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 10, perBuyerLimit: 3 }])
  const someone = buyer()
  await hold(eventUri, [{ ticketTypeId: tierIds[0]!, quantity: 2 }], { buyerDid: someone })
  expect(await refusal(hold(eventUri, [{ ticketTypeId: tierIds[0]!, quantity: 2 }], { buyerDid: someone }))).toBe('TicketHoldUnavailable')
  await hold(eventUri, [{ ticketTypeId: tierIds[0]!, quantity: 1 }], { buyerDid: someone })
  expect(await available(tierIds[0]!)).toBe(7)
})

test('one hold per app order: 40 concurrent duplicates get the same hold; other items under the same order are refused', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 10, perBuyerLimit: 3 }])
  const request = { buyerDid: buyer(), appOrderId: 'order-1' }
  // duplicates each taking part of the buyer's three shares must still converge on one hold
  const items = [{ ticketTypeId: tierIds[0]!, quantity: 3 }]
  const holds = await Promise.all(Array.from({ length: 40 }, () => hold(eventUri, items, request)))
  expect(new Set(holds.map((h) => h.holdId)).size).toBe(1)
  expect(await available(tierIds[0]!)).toBe(7)
  expect(await models.TicketHold.countDocuments({ appOrderId: 'order-1' })).toBe(1)
  expect(await refusal(hold(eventUri, [{ ticketTypeId: tierIds[0]!, quantity: 1 }], request))).toBe('InvalidRequest')
  expect(await refusal(hold(eventUri, items, { ...request, buyerDid: buyer() }))).toBe('InvalidRequest')
})

test('one hold per app order when concurrent calls under it ask for different items: one wins, the others are refused and leave no seat taken', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 10 }, { capacity: 10 }])
  const [a, b] = tierIds as [string, string]
  const request = { buyerDid: buyer(), appOrderId: 'order-contested' }
  const asks = [[{ ticketTypeId: a, quantity: 1 }], [{ ticketTypeId: b, quantity: 2 }]]
  const outcomes = await Promise.all(Array.from({ length: 10 }, (_, i) => hold(eventUri, asks[i % 2]!, request).then((h) => h, (e: unknown) => e)))
  const won = outcomes.filter((o): o is Awaited<ReturnType<typeof hold>> => !(o instanceof Error))
  expect(new Set(won.map((h) => h.holdId)).size).toBe(1)
  const winner = won[0]!
  // every call that asked what the winner holds got it; every other was refused for the order's other items
  for (const [i, o] of outcomes.entries()) {
    const same = JSON.stringify(asks[i % 2]) === JSON.stringify(winner.items)
    if (same) expect(o).toEqual(winner)
    else expect([o instanceof ContractError, (o as ContractError).code]).toEqual([true, 'InvalidRequest'])
  }
  expect(await models.TicketHold.countDocuments({ appOrderId: 'order-contested' })).toBe(1)
  // the losers' seats went back: only the winner's are taken
  const taken = winner.items[0]!.ticketTypeId === a ? [9, 10] : [10, 8]
  expect([await available(a), await available(b)]).toEqual(taken)
})

test('a lowered per-buyer limit counts the shares the buyer took under the higher one', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 50, perBuyerLimit: 10 }], 60)
  const tier = tierIds[0]!
  const someone = buyer()
  // shares #0–#4 in a hold left to lapse, #5–#9 paid
  await hold(eventUri, [{ ticketTypeId: tier, quantity: 5 }], { buyerDid: someone })
  const paid = await hold(eventUri, [{ ticketTypeId: tier, quantity: 5 }], { buyerDid: someone })
  expect(await secureHold(d, paid.holdId)).toBe(true)
  await settleHold(d, paid.holdId, { checkoutId: 'checkout-lowered', paymentUri: `at://${APP}/money.svc.payment.record/lowered` })
  clock.now = new Date(clock.now.getTime() + 61_000)
  const lowered = (limit: number) => configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [{ ticketTypeId: tier, name: 'Tier 0', priceAmount: 2500, currency: 'usd', capacity: 50, perBuyerLimit: limit }] })
  await lowered(5)
  // the buyer owns 5: none more, though #0–#4 are free again
  expect(await refusal(hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }], { buyerDid: someone }))).toBe('TicketHoldUnavailable')
  // another buyer holds up to the new limit
  const other = buyer()
  await hold(eventUri, [{ ticketTypeId: tier, quantity: 5 }], { buyerDid: other })
  expect(await refusal(hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }], { buyerDid: other }))).toBe('TicketHoldUnavailable')
  // raised to 7: the first buyer may hold 2 more
  await lowered(7)
  await hold(eventUri, [{ ticketTypeId: tier, quantity: 2 }], { buyerDid: someone })
  expect(await refusal(hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }], { buyerDid: someone }))).toBe('TicketHoldUnavailable')
})

test('a buyer at the limit asking again, or asking for more than the limit, is refused without trying each share', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 300, perBuyerLimit: 100 }, { capacity: 300, perBuyerLimit: 10 }])
  const [wide, narrow] = tierIds as [string, string]
  const someone = buyer()
  await hold(eventUri, [{ ticketTypeId: wide, quantity: 100 }], { buyerDid: someone })
  const inserts = jest.spyOn(models.CapacityUnit, 'create')
  try {
    expect(await refusal(hold(eventUri, [{ ticketTypeId: wide, quantity: 1 }], { buyerDid: someone }))).toBe('TicketHoldUnavailable')
    // a seat and a share tried per attempt (the first and its retries), not the buyer's hundred shares each
    expect(inserts.mock.calls.length).toBeLessThan(20)
    inserts.mockClear()
    expect(await refusal(hold(eventUri, [{ ticketTypeId: narrow, quantity: 11 }]))).toBe('TicketHoldUnavailable')
    expect(inserts).not.toHaveBeenCalled()
  } finally {
    inserts.mockRestore()
  }
  expect([await available(wide), await available(narrow)]).toEqual([200, 300])
})

test('a hold lapses at expiresAt: its seats return once and are sold again; the order still answers the lapsed hold', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 2 }], 60)
  const tier = tierIds[0]!
  const first = await hold(eventUri, [{ ticketTypeId: tier, quantity: 2 }], { appOrderId: 'lapsing' })
  expect(await refusal(hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }]))).toBe('TicketHoldUnavailable')
  clock.now = new Date(clock.now.getTime() + 61_000)
  expect(await available(tier)).toBe(2)
  expect(await models.ReservationOutcome.findById(first.holdId).lean()).toMatchObject({ outcome: 'released' })
  await hold(eventUri, [{ ticketTypeId: tier, quantity: 2 }])
  expect(await available(tier)).toBe(0)
  expect((await hold(eventUri, [{ ticketTypeId: tier, quantity: 2 }], { appOrderId: 'lapsing', buyerDid: (await models.TicketHold.findById(first.holdId).lean())!.buyerDid })).holdId).toBe(first.holdId)
})

test('a hold attempt that died between taking its seats and inserting its hold: the retry waits for it a while, then lets them go', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 1, perBuyerLimit: 1 }])
  const tier = (await models.Tier.findById(tierIds[0]!).lean())!
  const request = { buyerDid: buyer(), appOrderId: 'died-midway' }
  const died = `hold_${randomBytes(12).toString('hex')}`
  const taken = await reserve(d, { id: died, expiresAt: new Date(clock.now.getTime() + 600_000), buyerDid: request.buyerDid, orderKey: `${APP} test died-midway` }, [
    { tierId: tier._id, seatRange: tier.seatRange, quantity: 1, buyer: { did: request.buyerDid, perBuyerLimit: 1 } },
  ])
  expect(taken).toEqual({ ok: true })
  // so young it may be a twin on its way to its hold: the retry waits for that (10 s), then asks to be retried
  expect(await refusal(hold(eventUri, [{ ticketTypeId: tier._id, quantity: 1 }], request))).toBe('ServiceUnavailable')
  expect(await models.CapacityUnit.countDocuments({ reservationId: died })).toBe(2)

  clock.now = new Date(clock.now.getTime() + (HOLD_ATTEMPT_SECONDS + 1) * 1000)
  const held = await hold(eventUri, [{ ticketTypeId: tier._id, quantity: 1 }], request)
  expect(held.holdId).not.toBe(died)
  expect(await models.ReservationOutcome.findById(died).lean()).toMatchObject({ outcome: 'released' })
  expect(await models.CapacityUnit.countDocuments({ reservationId: died })).toBe(0)
  expect(await models.CapacityUnit.countDocuments({ reservationId: held.holdId })).toBe(2)
  expect(await available(tier._id)).toBe(0)
}, 30_000)

test('a slow hold attempt whose first seat is older than the limit but whose last is recent is in flight, not let go', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 1 }, { capacity: 1 }])
  const [first, second] = await Promise.all(tierIds.map(async (id) => (await models.Tier.findById(id).lean())!))
  const request = { buyerDid: buyer(), appOrderId: 'slow-attempt' }
  const slow = { id: `hold_${randomBytes(12).toString('hex')}`, expiresAt: new Date(clock.now.getTime() + 600_000), buyerDid: request.buyerDid, orderKey: `${APP} test slow-attempt` }
  const unit = (tier: typeof first) => [{ tierId: tier!._id, seatRange: tier!.seatRange, quantity: 1, buyer: { did: request.buyerDid, perBuyerLimit: 10 } }]
  expect(await reserve(d, slow, unit(first))).toEqual({ ok: true })
  clock.now = new Date(clock.now.getTime() + (HOLD_ATTEMPT_SECONDS - 1) * 1000)
  expect(await reserve(d, slow, unit(second))).toEqual({ ok: true })
  clock.now = new Date(clock.now.getTime() + 2000)
  // the retry waits for it (then asks to be retried) rather than releasing a live attempt's seats
  expect(await refusal(hold(eventUri, [{ ticketTypeId: first!._id, quantity: 1 }, { ticketTypeId: second!._id, quantity: 1 }], request))).toBe('ServiceUnavailable')
  expect(await models.ReservationOutcome.findById(slow.id).lean()).toBeNull()
  expect(await models.CapacityUnit.countDocuments({ reservationId: slow.id })).toBe(4)
}, 30_000)

test('two waves of 500 concurrent holds on 100 seats: each holds exactly 100, the second the seats the first\'s lapsed holds returned, never twice', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 100 }], 60)
  const tier = tierIds[0]!
  const attempt = () => hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }]).then(() => 'held', (e: unknown) => (e instanceof ContractError ? e.code : String(e)))
  let started = Date.now()
  const first = await Promise.all(Array.from({ length: 500 }, attempt))
  console.info(`500 concurrent holds on 100 free seats: ${Date.now() - started} ms`)
  expect(first.filter((r) => r === 'held')).toHaveLength(100)
  expect(first.filter((r) => r !== 'held' && r !== 'TicketHoldUnavailable')).toEqual([])
  // every hold lapses; the next 500 race for the seats they return
  clock.now = new Date(clock.now.getTime() + 61_000)
  started = Date.now()
  const second = await Promise.all(Array.from({ length: 500 }, attempt))
  console.info(`500 concurrent holds on 100 lapsed seats: ${Date.now() - started} ms`)
  expect(second.filter((r) => r === 'held')).toHaveLength(100)
  expect(await models.CapacityUnit.countDocuments({ tierId: tier, kind: 'seat' })).toBe(100)
  expect(await models.ReservationOutcome.countDocuments({ outcome: 'released', _id: { $in: (await models.TicketHold.find({ eventUri }, { _id: 1 }).lean()).map((h) => h._id) } })).toBe(100)
  expect(await available(tier)).toBe(0)
}, 120_000)

test('a hold released by a process that stopped before deleting its seats is finished by the next read', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 2 }], 60)
  const tier = tierIds[0]!
  const stopped = await hold(eventUri, [{ ticketTypeId: tier, quantity: 2 }])
  clock.now = new Date(clock.now.getTime() + 61_000)
  // the outcome was written, the units were not deleted
  await models.ReservationOutcome.create({ _id: stopped.holdId, outcome: 'released', at: clock.now })
  expect(await available(tier)).toBe(2)
  expect(await models.CapacityUnit.countDocuments({ reservationId: stopped.holdId })).toBe(0)
  await hold(eventUri, [{ ticketTypeId: tier, quantity: 2 }])
  expect(await available(tier)).toBe(0)
})

test('a hold past its expiry that no job or read released yet is not secured for a payment: its seats return', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 5 }], 60)
  const tier = tierIds[0]!
  const held = await hold(eventUri, [{ ticketTypeId: tier, quantity: 2 }])
  const kept = await hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }])
  expect(await secureHold(d, kept.holdId)).toBe(true)
  clock.now = new Date(clock.now.getTime() + 61_000)
  try {
    expect(await secureHold(d, held.holdId)).toBe(false)
    // a hold secured before its expiry stays secured
    expect(await secureHold(d, kept.holdId)).toBe(true)
    expect(await available(tier)).toBe(4)
  } finally {
    clock.now = new Date()
  }
})

test('10 concurrent secures, then 10 concurrent settles of one paid hold: its tickets are issued once, each with its own seat, each announced once', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 6, perBuyerLimit: 4 }])
  const tier = tierIds[0]!
  const held = await hold(eventUri, [{ ticketTypeId: tier, quantity: 3 }])
  expect(await Promise.all(Array.from({ length: 10 }, () => secureHold(d, held.holdId)))).toEqual(Array(10).fill(true))
  const payment = { checkoutId: 'cko_test_concurrent', paymentUri: `at://did:web:svc.example.com/money.svc.payment.record/${randomBytes(6).toString('hex')}` }
  const answers = await Promise.all(Array.from({ length: 10 }, () => settleHold(d, held.holdId, payment)))
  const ids = purchaseTicketIds(held.holdId, [{ ticketTypeId: tier, quantity: 3 }]).map((t) => t.id).sort()
  for (const tickets of answers) expect(tickets.map((t) => t._id).sort()).toEqual(ids)
  const stored = await models.Ticket.find({ holdId: held.holdId }).lean()
  expect(stored.map((t) => t._id).sort()).toEqual(ids)
  const units = stored.flatMap((t) => t.unitIds ?? [])
  expect(new Set(units).size).toBe(units.length)
  expect(units).toHaveLength(6) // a seat and a buyer share each
  expect((await models.TicketHold.findById(held.holdId).lean())!.status).toBe('paid')
  expect(await models.Outbox.countDocuments({ type: 'ticket.issued', 'data.ticketId': { $in: ids } })).toBe(3)
  expect(await available(tier)).toBe(3)
})

test('a paid hold whose first settle stopped mid-insert, then a ticket voided: the rest get seats of their own', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 5 }])
  const tier = tierIds[0]!
  const items = [{ ticketTypeId: tier, quantity: 3 }]
  const held = await hold(eventUri, items)
  expect(await secureHold(d, held.holdId)).toBe(true)
  const payment = { checkoutId: 'cko_test_partial', paymentUri: `at://did:web:svc.example.com/money.svc.payment.record/${randomBytes(6).toString('hex')}` }
  // the first settle inserts the first ticket, then its connection drops
  const insertMany = jest.spyOn(models.Ticket, 'insertMany').mockImplementationOnce((async (docs: unknown[]) => {
    await models.Ticket.create(docs[0] as never)
    throw new Error('connection reset')
  }) as never)
  try {
    await expect(settleHold(d, held.holdId, payment)).rejects.toThrow('connection reset')
  } finally {
    insertMany.mockRestore()
  }
  const [first] = purchaseTicketIds(held.holdId, items)
  await voidTicket(d, ORGANIZER, 'test', first!.id)
  expect(await available(tier)).toBe(3)

  const issued = (await settleHold(d, held.holdId, payment)).filter((t) => t.status === 'issued')
  expect(issued).toHaveLength(2)
  const units = issued.flatMap((t) => t.unitIds ?? [])
  expect(units).toHaveLength(4)
  expect(new Set(units).size).toBe(4)
  // voiding them returns every seat the hold took
  for (const ticket of issued) await voidTicket(d, ORGANIZER, 'test', ticket._id)
  expect(await available(tier)).toBe(5)
  expect(await models.CapacityUnit.countDocuments({ reservationId: held.holdId })).toBe(0)
})

test('a large reservation takes its seats in batches alongside concurrent ones: each gets exactly its count or nothing', async () => {
  const { tierIds } = await event([{ capacity: 1500 }])
  const tier = (await models.Tier.findById(tierIds[0]!).lean())!
  const big = (id: string, quantity: number) => reserve(d, { id, expiresAt: new Date(clock.now.getTime() + 600_000) }, [{ tierId: tier._id, seatRange: tier.seatRange, quantity }])
  // 1,200 seats in three commands of 500 or fewer, racing 40 reservations of 10 for the same seats
  const ids = ['block_big', ...Array.from({ length: 40 }, (_, i) => `hold_small${i}`)]
  const results = await Promise.all(ids.map((id, i) => big(id, i === 0 ? 1200 : 10)))
  let total = 0
  for (const [i, id] of ids.entries()) {
    const units = await models.CapacityUnit.countDocuments({ reservationId: id, kind: 'seat' })
    expect(units).toBe(results[i]!.ok ? (i === 0 ? 1200 : 10) : 0)
    total += units
  }
  expect(total).toBeLessThanOrEqual(1500)
  // the seats went somewhere: the first reservation to finish found them free
  expect(results.some((r) => r.ok)).toBe(true)
  expect(await available(tier._id)).toBe(1500 - total)
})

test('a retry never lets go of a slow attempt that already went on to insert its hold: the hold keeps its seats and can be paid', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 1, perBuyerLimit: 1 }])
  const tier = tierIds[0]!
  let verdict: boolean | undefined
  // the attempt stalls right before its insert, past HOLD_ATTEMPT_SECONDS; a retry of its order takes it for dead then
  const create = jest.spyOn(models.TicketHold, 'create').mockImplementationOnce((async (doc: { _id: string }) => {
    clock.now = new Date(clock.now.getTime() + (HOLD_ATTEMPT_SECONDS + 1) * 1000)
    verdict = await abandonHoldAttempt(d, doc._id)
    create.mockRestore()
    return models.TicketHold.create(doc)
  }) as never)
  const held = await hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }], { appOrderId: 'slow-insert' })
  expect(verdict).toBe(false)
  expect(await models.ReservationOutcome.findById(held.holdId).lean()).toBeNull()
  expect(await models.CapacityUnit.countDocuments({ reservationId: held.holdId })).toBe(2)
  expect(await secureHold(d, held.holdId)).toBe(true)
})

test('an attempt that decided to insert its hold waits out a database away for a moment: its hold is inserted, keeps its seats and can be paid', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 1, perBuyerLimit: 1 }])
  const tier = tierIds[0]!
  // the database goes away right after the attempt's decision: its first two inserts fail on the network
  const away = () => Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' })
  const create = jest.spyOn(models.TicketHold, 'create').mockRejectedValueOnce(away()).mockRejectedValueOnce(away())
  const order = { appOrderId: 'database-away', buyerDid: buyer() }
  let held: Awaited<ReturnType<typeof hold>>
  try {
    held = await hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }], order)
  } finally {
    create.mockRestore()
  }
  expect(await models.TicketHold.countDocuments({ _id: held.holdId })).toBe(1)
  expect(await models.CapacityUnit.countDocuments({ reservationId: held.holdId })).toBe(2)
  expect(await secureHold(d, held.holdId)).toBe(true)
  // a retry of the order finds it
  expect((await hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }], order)).holdId).toBe(held.holdId)
})

test("an insert that landed though its answer was lost is the attempt's own: it is tried again, meets itself, and stands with its seats", async () => {
  const { eventUri, tierIds } = await event([{ capacity: 1, perBuyerLimit: 1 }])
  const tier = tierIds[0]!
  const create = jest.spyOn(models.TicketHold, 'create').mockImplementationOnce((async (doc: unknown) => {
    await models.TicketHold.collection.insertOne(doc as never)
    throw Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' })
  }) as never)
  let held: Awaited<ReturnType<typeof hold>>
  try {
    held = await hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }], { appOrderId: 'answer-lost' })
  } finally {
    create.mockRestore()
  }
  expect(await models.ReservationOutcome.findById(held.holdId).lean()).toBeNull()
  expect(await models.CapacityUnit.countDocuments({ reservationId: held.holdId })).toBe(2)
  expect(await secureHold(d, held.holdId)).toBe(true)
})

test('a decision to insert the hold that landed though its answer was lost is tried again, reads itself, and the hold stands', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 1, perBuyerLimit: 1 }])
  const tier = tierIds[0]!
  const order = { appOrderId: 'decision-answer-lost', buyerDid: buyer() }
  const create = jest.spyOn(models.ReservationOutcome, 'create').mockImplementationOnce((async (doc: { _id: string }) => {
    await models.ReservationOutcome.collection.insertOne(doc as never)
    throw Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' })
  }) as never)
  let held: Awaited<ReturnType<typeof hold>>
  try {
    held = await hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }], order)
  } finally {
    create.mockRestore()
  }
  expect(await models.ReservationOutcome.findById(`attempt_${held.holdId}`).lean()).toMatchObject({ outcome: 'kept' })
  expect(await models.TicketHold.countDocuments({ _id: held.holdId })).toBe(1)
  expect(await secureHold(d, held.holdId)).toBe(true)
  // a retry of the order finds it, rather than waiting for a twin "still being created" until its seats lapse
  expect((await hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }], order)).holdId).toBe(held.holdId)
})

test('an attempt the retry abandoned first does not insert its hold: it lets its units go and tries again', async () => {
  const { eventUri, tierIds } = await event([{ capacity: 1, perBuyerLimit: 1 }])
  const tier = tierIds[0]!
  let verdict: boolean | undefined
  let abandoned: string | undefined
  // the retry's verdict lands before the attempt's own decision to insert
  const decideOnce = jest.spyOn(models.ReservationOutcome, 'create').mockImplementationOnce((async (doc: { _id: string }) => {
    decideOnce.mockRestore()
    abandoned = doc._id.replace(/^attempt_/, '')
    verdict = await abandonHoldAttempt(d, abandoned)
    return models.ReservationOutcome.create(doc)
  }) as never)
  const held = await hold(eventUri, [{ ticketTypeId: tier, quantity: 1 }], { appOrderId: 'abandoned-first' })
  expect(verdict).toBe(true)
  expect(held.holdId).not.toBe(abandoned)
  expect(await models.TicketHold.countDocuments({ _id: abandoned })).toBe(0)
  expect(await models.CapacityUnit.countDocuments({ reservationId: abandoned })).toBe(0)
  expect(await secureHold(d, held.holdId)).toBe(true)
  expect(await available(tier)).toBe(0)
})

describe('a hold and its checkout (the payments domain answered here)', () => {
  /** The domain with this checkout port, and the expiry jobs it adds. */
  const withCheckouts = (start: HoldCheckouts['start']) => {
    const scheduled: string[] = []
    const serving: ServingTickets = { ...d, checkouts: { start }, holdExpiry: { schedule: async (holdId) => void scheduled.push(holdId) } }
    return { serving, scheduled }
  }

  test("an expiry job that cannot be added (Redis away) leaves the hold made, logged with the request's id", async () => {
    const { eventUri, tierIds } = await event([{ capacity: 5 }])
    const lines: Record<string, unknown>[] = []
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) }).child({ reqId: 'req_hold_1' })
    const serving: ServingTickets = {
      ...d,
      logger,
      checkouts: { start: async (input) => ({ url: `http://checkout.invalid/checkout/${input.holdId}`, token: `pst_test_${input.holdId}` }) },
      holdExpiry: { schedule: () => Promise.reject(new Error('Connection is closed.')) },
    }
    const held = await createTicketHold(serving, APP, { environment: 'test', eventUri, buyerDid: buyer(), appOrderId: randomBytes(6).toString('hex'), items: [{ ticketTypeId: tierIds[0]!, quantity: 1 }] })
    expect(await available(tierIds[0]!)).toBe(4)
    expect(lines.filter((l) => /hold expiry/.test(String(l.msg))).map((l) => [l.reqId, l.holdId, l.level])).toEqual([['req_hold_1', held.holdId, 40]])
  })

  test('a checkout refused for good takes the hold away, and leaves no expiry job for it', async () => {
    const { eventUri, tierIds } = await event([{ capacity: 5 }])
    const { serving, scheduled } = withCheckouts(async () => {
      throw new ContractError('InvalidRequest', 'the tickets cost less than the fees')
    })
    const order = randomBytes(6).toString('hex')
    expect(await refusal(createTicketHold(serving, APP, { environment: 'test', eventUri, buyerDid: buyer(), appOrderId: order, items: [{ ticketTypeId: tierIds[0]!, quantity: 2 }] }))).toBe('InvalidRequest')
    expect(await models.TicketHold.countDocuments({ appOrderId: order })).toBe(0)
    expect(await available(tierIds[0]!)).toBe(5)
    expect(scheduled).toEqual([])
  })

  test('a checkout started for a hold that was taken away meanwhile fails quietly: nothing to release, the seats stay free', async () => {
    const { eventUri, tierIds } = await event([{ capacity: 5 }])
    let holdId = ''
    const { serving } = withCheckouts(async (input) => {
      holdId = input.holdId
      throw new ContractError('InvalidRequest', 'the tickets cost less than the fees')
    })
    expect(await refusal(createTicketHold(serving, APP, { environment: 'test', eventUri, buyerDid: buyer(), appOrderId: randomBytes(6).toString('hex'), items: [{ ticketTypeId: tierIds[0]!, quantity: 2 }] }))).toBe('InvalidRequest')
    expect(await models.TicketHold.countDocuments({ _id: holdId })).toBe(0)
    // a concurrent start of the same order inserted its checkout anyway; it expires unpaid, and its settlement asks
    // for the hold's seats back (as it does on every sweep until it answers)
    await expect(settleHold(d, holdId, null)).resolves.toEqual([])
    expect(await available(tierIds[0]!)).toBe(5)
    // paid, it would be a ticket with no hold: that still throws
    await expect(settleHold(d, holdId, { checkoutId: 'chk_x', paymentUri: 'at://did:plc:x/money.svc.payment.record/x' })).rejects.toThrow(/does not exist/)
  })

  test("a kept hold that payments' clock, ahead of this one, finds lapsed when the retry comes: the retry is judged as a first call", async () => {
    const { eventUri, tierIds } = await event([{ capacity: 5 }], 60)
    let calls = 0
    const PAYMENTS_AHEAD_MS = 45_000
    const { serving } = withCheckouts(async (input) => {
      if (++calls === 1) throw new ContractError('ServiceUnavailable', 'payments is away')
      if (new Date(input.expiresAt).getTime() <= clock.now.getTime() + PAYMENTS_AHEAD_MS) throw new ContractError('InvalidRequest', 'the hold has lapsed')
      return { url: `http://checkout.invalid/checkout/${input.holdId}`, token: `pst_test_${input.holdId}` }
    })
    const body: HoldRequest = { environment: 'test', eventUri, buyerDid: buyer(), appOrderId: randomBytes(6).toString('hex'), items: [{ ticketTypeId: tierIds[0]!, quantity: 2 }] }
    expect(await refusal(createTicketHold(serving, APP, body))).toBe('ServiceUnavailable')
    const kept = (await models.TicketHold.findOne({ appOrderId: body.appOrderId }).lean())!
    // 30 s later: by this clock the hold has 30 s left, by payments' it lapsed 15 s ago
    clock.now = new Date(clock.now.getTime() + 30_000)
    try {
      const retried = await createTicketHold(serving, APP, body)
      expect(retried.holdId).not.toBe(kept._id)
      expect(retried.checkout.url).toBe(`http://checkout.invalid/checkout/${retried.holdId}`)
      expect(await models.TicketHold.find({ appOrderId: body.appOrderId }, { _id: 1 }).lean()).toEqual([{ _id: retried.holdId }])
      expect(await available(tierIds[0]!)).toBe(3)
    } finally {
      clock.now = new Date()
    }
  })

  test('a hold that lapses before its own checkout starts (the database stalled past the hold): ServiceUnavailable, not the app\'s error; the retry holds anew', async () => {
    const { eventUri, tierIds } = await event([{ capacity: 5 }], 60)
    let stall = true
    const { serving } = withCheckouts(async (input) => {
      if (stall) clock.now = new Date(clock.now.getTime() + 61_000)
      if (new Date(input.expiresAt) <= clock.now) throw new ContractError('InvalidRequest', 'the hold has lapsed')
      return { url: `http://checkout.invalid/checkout/${input.holdId}`, token: `pst_test_${input.holdId}` }
    })
    const body: HoldRequest = { environment: 'test', eventUri, buyerDid: buyer(), appOrderId: randomBytes(6).toString('hex'), items: [{ ticketTypeId: tierIds[0]!, quantity: 2 }] }
    try {
      // before: 400 InvalidRequest, final for the app
      expect(await refusal(createTicketHold(serving, APP, body))).toBe('ServiceUnavailable')
      expect(await models.TicketHold.countDocuments({ appOrderId: body.appOrderId })).toBe(0)
      expect(await available(tierIds[0]!)).toBe(5)
      stall = false
      const retried = await createTicketHold(serving, APP, body)
      expect(retried.checkout.url).toBe(`http://checkout.invalid/checkout/${retried.holdId}`)
      expect(await available(tierIds[0]!)).toBe(3)
    } finally {
      clock.now = new Date()
    }
  })

  test('a hold kept for its retry while payments was away, lapsed when the retry comes: the retry is judged as a first call', async () => {
    const { eventUri, tierIds } = await event([{ capacity: 5 }], 60)
    let calls = 0
    const { serving, scheduled } = withCheckouts(async (input) => {
      if (++calls === 1) throw new ContractError('ServiceUnavailable', 'payments is away')
      // as payments answers a hold with no checkout started
      if (new Date(input.expiresAt) <= clock.now) throw new ContractError('InvalidRequest', 'the hold has lapsed')
      return { url: `http://checkout.invalid/checkout/${input.holdId}`, token: `pst_test_${input.holdId}` }
    })
    const body: HoldRequest = { environment: 'test', eventUri, buyerDid: buyer(), appOrderId: randomBytes(6).toString('hex'), items: [{ ticketTypeId: tierIds[0]!, quantity: 2 }] }
    expect(await refusal(createTicketHold(serving, APP, body))).toBe('ServiceUnavailable')
    const kept = (await models.TicketHold.findOne({ appOrderId: body.appOrderId }).lean())!
    expect(scheduled).toEqual([kept._id])
    clock.now = new Date(clock.now.getTime() + 61_000)
    try {
      const retried = await createTicketHold(serving, APP, body)
      expect(retried.holdId).not.toBe(kept._id)
      expect(retried.checkout.url).toBe(`http://checkout.invalid/checkout/${retried.holdId}`)
      expect(new Date(retried.expiresAt).getTime()).toBe(clock.now.getTime() + 60_000)
      expect(await models.TicketHold.find({ appOrderId: body.appOrderId }, { _id: 1 }).lean()).toEqual([{ _id: retried.holdId }])
      expect(await available(tierIds[0]!)).toBe(3)
      expect(scheduled).toEqual([kept._id, retried.holdId])
    } finally {
      clock.now = new Date()
    }
  })
})
