/**
 * configureTicketTiers in the tickets domain, on its own database of the test FerretDB: two configurations of one
 * event never decide on each other's half-done work (one runs at a time), a refused capacity cut changes nothing, and
 * a cut or a hold whose seat inserts were written but answered with a lost connection keeps none of them.
 * A configuration is held at a chosen point by a gate on its reads of the seat units, so each interleaving runs the
 * same every time.
 */
import { randomBytes } from 'node:crypto'
import { ContractError } from '@svc/errors'
import { configureTicketTiers, reserve, type ServingTickets, type TicketsModels } from '../src'
import { availableSeats } from '../src/domain/availability'
import { KEPT_UNTIL } from '../src/domain/capacity'
import { tierCapacity } from '../src/domain/configure-tiers'
import { eventKey } from '../src/domain/event-access'
import { APP, ORGANIZER, openTicketsDomain } from './helpers'

let models: TicketsModels
const clock = { now: new Date() }
let d: ServingTickets
let close: () => Promise<void>

beforeAll(async () => {
  ;({ models, d, close } = await openTicketsDomain('tickets-configure', clock))
})
afterAll(async () => {
  await close()
})

const newEventUri = () => `at://${ORGANIZER}/community.lexicon.calendar.event/${randomBytes(6).toString('hex')}`
const tier = (id: string, capacity: number, o: object = {}) => ({ ticketTypeId: id, name: 'General', priceAmount: 1500, currency: 'usd', capacity, ...o })

async function pricedTier(capacity: number) {
  const eventUri = newEventUri()
  const configured = await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [{ name: 'General', priceAmount: 1500, currency: 'usd', capacity }] })
  return { eventUri, tierId: configured.tiers[0]!.ticketTypeId }
}

/** The domain with its `nth` read of seat units held until `open()`; `reached` resolves when it is. */
function gated(nth: number): { d: ServingTickets; reached: Promise<void>; open: () => void } {
  let open!: () => void
  let reach!: () => void
  const gate = new Promise<void>((resolve) => (open = resolve))
  const reached = new Promise<void>((resolve) => (reach = resolve))
  let reads = 0
  const units = new Proxy(models.CapacityUnit, {
    get(target, prop, receiver) {
      if (prop !== 'find') return Reflect.get(target, prop, receiver)
      return (...args: Parameters<typeof target.find>) => {
        if (++reads !== nth) return target.find(...args)
        reach()
        return { lean: async () => (await gate, target.find(...args).lean()) }
      }
    },
  })
  return { d: { ...d, models: { ...models, CapacityUnit: units } }, reached, open }
}

/** Runs `fn` with the machine's clock 200 s on: a configuration held meanwhile has outlived its turn (120 s). */
async function pastTurn(fn: () => Promise<void>): Promise<void> {
  const realNow = Date.now.bind(Date)
  const clockMoved = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 200_000)
  try {
    await fn()
  } finally {
    clockMoved.mockRestore()
  }
}

/** Sells `count` seats of the tier as it is now (kept, as paid tickets' seats are). */
async function sell(tierId: string, count: number) {
  const current = (await models.Tier.findById(tierId).lean())!
  const result = await reserve(d, { id: `sold_${randomBytes(8).toString('hex')}`, expiresAt: KEPT_UNTIL }, [{ tierId, seatRange: current.seatRange, quantity: count }])
  expect(result).toEqual({ ok: true })
}

test('two overlapping configurations: the later decides on what the earlier wrote, so the capacity never falls below what is sold', async () => {
  const { eventUri, tierId } = await pricedTier(100)
  // B reads the tier (range 100), checks it and is held just before it decides (its second read of the seat units:
  // the check reads the taken ones, and counts the blocked ones)
  const slow = gated(2)
  const b = configureTicketTiers(slow.d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, 105)] })
  await slow.reached
  // A raises the capacity to 150 meanwhile; whatever A managed to open is sold at once
  const a = configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, 150)] })
  await new Promise((resolve) => setTimeout(resolve, 300))
  const current = (await models.Tier.findById(tierId).lean())!
  await sell(tierId, current.seatRange)
  slow.open()
  const answers = await Promise.allSettled([b, a])
  const sold = await models.CapacityUnit.countDocuments({ tierId, kind: 'seat', reservationId: /^sold_/ })
  const final = (await models.Tier.findById(tierId).lean())!
  // no seat sold lies outside the range, and the capacity covers every seat sold
  expect(final.seatRange).toBeGreaterThanOrEqual(sold)
  expect(await tierCapacity(d, final)).toBeGreaterThanOrEqual(sold)
  // one ran after the other: the one that answered last set the capacity
  expect(answers.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled'])
  expect(await tierCapacity(d, final)).toBe(150)
  expect(await availableSeats(d, final)).toBe(150 - sold)
})

test('a configuration stalled past its turn stops before writing: the next one, which took the lapsed turn, stands, and no seat sold lies outside the range', async () => {
  const { eventUri, tierId } = await pricedTier(100)
  await sell(tierId, 100)
  // B reads the tier (range 100), checks it (capacity 120 fits) and is held just before it decides
  const slow = gated(2)
  const b = configureTicketTiers(slow.d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, 120)] })
  await slow.reached
  // B stalls past its turn (a slow database); A takes the lapsed turn, raises the capacity to 150, and the 50 new seats sell
  await pastTurn(async () => {
    await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, 150)] })
    await sell(tierId, 50)
    slow.open()
    expect(((await b.catch((e: unknown) => e)) as ContractError).code).toBe('ServiceUnavailable')
  })
  const final = (await models.Tier.findById(tierId).lean())!
  expect(final.seatRange).toBe(150)
  expect(await tierCapacity(d, final)).toBe(150)
  expect(await models.CapacityUnit.countDocuments({ tierId, kind: 'seat', reservationId: /^sold_/ })).toBe(150)
})

test("a raise stalled past its turn does not undo the next configuration's cut: it stops before letting blocked seats go", async () => {
  const { eventUri, tierId } = await pricedTier(100)
  // B (a raise to 120) is held at its read of the blocked seats, about to let them go
  const slow = gated(2)
  const b = configureTicketTiers(slow.d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, 120)] })
  await slow.reached
  // A takes the lapsed turn and cuts the capacity to 80: 20 seats into the organizer's block
  await pastTurn(async () => {
    await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, 80)] })
    slow.open()
    expect(((await b.catch((e: unknown) => e)) as ContractError).code).toBe('ServiceUnavailable')
  })
  expect(await tierCapacity(d, (await models.Tier.findById(tierId).lean())!)).toBe(80)
})

test('a configuration that waits longer than its turn allows is answered ServiceUnavailable and changes nothing', async () => {
  const { eventUri, tierId } = await pricedTier(10)
  // the event's first turn was its creation; the second is taken by a holder that neither ends it nor lets it lapse
  const key = eventKey('test', eventUri)
  await models.ConfigurationTurn.create({ _id: `${key}#2`, key, n: 2, expiresAt: new Date(Date.now() + 60_000) })
  const answer = await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, 20)] }).catch((e: unknown) => e)
  expect((answer as ContractError).code).toBe('ServiceUnavailable')
  expect(await tierCapacity(d, (await models.Tier.findById(tierId).lean())!)).toBe(10)
  // once the dead holder's turn lapses, the next configuration takes the turn after it
  await models.ConfigurationTurn.updateOne({ _id: `${key}#2` }, { $set: { expiresAt: new Date(Date.now() - 1) } })
  await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, 20)] })
  expect(await tierCapacity(d, (await models.Tier.findById(tierId).lean())!)).toBe(20)
  expect(await models.ConfigurationTurn.exists({ _id: `${key}#3` })).toBeTruthy()
}, 20_000)

test('eight concurrent configurations of one event each run alone: each answers its own capacity, and one of them stands whole (its capacity, every seat of it on sale)', async () => {
  const { eventUri, tierId } = await pricedTier(100)
  const capacities = [101, 140, 90, 120, 95, 160, 100, 130]
  const answers = await Promise.all(capacities.map((capacity) => configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, capacity)] })))
  expect(answers.map((a) => a.tiers[0]!.capacity)).toEqual(capacities)
  const final = (await models.Tier.findById(tierId).lean())!
  expect(capacities).toContain(await tierCapacity(d, final))
  expect(await availableSeats(d, final)).toBe(await tierCapacity(d, final))
})

test('a capacity cut refused because holds took the free seats meanwhile changes nothing: no new tier, no field, no block', async () => {
  const { eventUri, tierId } = await pricedTier(100)
  const second = await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, 100), { name: 'Second', priceAmount: 900, currency: 'usd', capacity: 100 }] })
  const secondId = second.tiers[1]!.ticketTypeId
  await sell(tierId, 70)
  // cut the second tier to 50 and the first to 80 (20 of its 30 free seats): checked (two reads of the seat units),
  // then held
  const slow = gated(3)
  const cut = configureTicketTiers(slow.d, APP, {
    environment: 'test',
    eventUri,
    organizerDid: ORGANIZER,
    tiers: [tier(secondId, 50, { name: 'Second renamed' }), tier(tierId, 80, { name: 'Renamed' }), { name: 'VIP', priceAmount: 5000, currency: 'usd', capacity: 10 }],
  })
  await slow.reached
  // holds take 25 of the first tier's 30 free seats before the cut blocks its 20
  await sell(tierId, 25)
  slow.open()
  const answer = await cut.catch((e: unknown) => e)
  expect((answer as ContractError).code).toBe('InvalidRequest')
  expect(await models.Tier.countDocuments({ eventUri })).toBe(2)
  const [first, other] = await Promise.all([models.Tier.findById(tierId).lean(), models.Tier.findById(secondId).lean()])
  expect(first!.name).toBe('General')
  expect(other!.name).toBe('Second')
  expect(await tierCapacity(d, first!)).toBe(100)
  expect(await tierCapacity(d, other!)).toBe(100)
})

test('a sale window is an ISO 8601 datetime with a zone, whatever the process\'s TZ: without one, or in another form new Date() reads, it is refused; offsets are kept as the instant', async () => {
  const tz = process.env.TZ
  process.env.TZ = 'Asia/Kolkata'
  try {
    for (const salesStartAt of ['2026-06-01T09:00:00', '2026', 'March 1 2026', '2026-02-30T00:00:00Z', '2026-06-01T24:00:00Z']) {
      const refused = await configureTicketTiers(d, APP, { environment: 'test', eventUri: newEventUri(), organizerDid: ORGANIZER, tiers: [{ name: 'GA', priceAmount: 1500, currency: 'usd', capacity: 5, salesStartAt }] }).catch((e: unknown) => e as ContractError)
      expect({ salesStartAt, code: (refused as ContractError).code }).toEqual({ salesStartAt, code: 'InvalidRequest' })
    }
    const eventUri = newEventUri()
    const made = await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [{ name: 'GA', priceAmount: 1500, currency: 'usd', capacity: 5, salesStartAt: '2026-06-01T09:00:00+05:30' }] })
    expect((await models.Tier.findById(made.tiers[0]!.ticketTypeId).lean())!.salesStartAt).toEqual(new Date('2026-06-01T03:30:00Z'))
  } finally {
    if (tz === undefined) delete process.env.TZ
    else process.env.TZ = tz
  }
})

test('an update gives the whole tier: an optional field left out takes its default or is cleared, as on creation', async () => {
  const eventUri = newEventUri()
  const window = { salesStartAt: '2026-01-01T00:00:00.000Z', salesEndAt: '2030-01-01T00:00:00.000Z' }
  const created = await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [{ name: 'General', priceAmount: 1500, currency: 'usd', capacity: 10, perBuyerLimit: 4, ...window }] })
  const tierId = created.tiers[0]!.ticketTypeId
  expect(await models.Tier.findById(tierId).lean()).toMatchObject({ perBuyerLimit: 4, salesStartAt: new Date(window.salesStartAt), salesEndAt: new Date(window.salesEndAt) })
  await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, 10, { name: 'Renamed' })] })
  expect(await models.Tier.findById(tierId).lean()).toMatchObject({ name: 'Renamed', perBuyerLimit: 10, salesStartAt: null, salesEndAt: null })
})

/**
 * The domain whose inserts of many seat units (of `tierId` only, when given) are carried out but answered with a lost
 * connection (the reply lost, whatever it said: refusals as another's included).
 */
function repliesLost(base: ServingTickets = d, tierId?: string): ServingTickets {
  const collection = new Proxy(models.CapacityUnit.collection, {
    get(target, prop, receiver) {
      if (prop !== 'insertMany') return Reflect.get(target, prop, receiver)
      return async (...args: Parameters<typeof target.insertMany>) => {
        const docs = args[0] as unknown as { tierId: string }[]
        if (tierId && docs[0]?.tierId !== tierId) return target.insertMany(...args)
        await target.insertMany(...args).catch(() => undefined)
        throw Object.assign(new Error('connection closed before the reply'), { name: 'MongoNetworkError' })
      }
    },
  })
  const units = new Proxy(models.CapacityUnit, { get: (target, prop, receiver) => (prop === 'collection' ? collection : Reflect.get(target, prop, receiver)) })
  return { ...base, models: { ...models, CapacityUnit: units } }
}

/** A seat map that missed every write (it always shows every seat free), recording the seats it is told are freed. */
function staleSeatMap(): { d: ServingTickets; freed: number[] } {
  const freed: number[] = []
  const seatMap: NonNullable<ServingTickets['seatMap']> = {
    read: async () => ({ taken: Buffer.alloc(0), due: [] }),
    holding: async () => undefined,
    took: async () => undefined,
    freed: async (_tierId, seats) => void freed.push(...seats),
    ended: async () => undefined,
    rebuild: async () => null,
    stale: async () => [],
  }
  return { d: { ...d, seatMap }, freed }
}

test("a capacity cut whose seats were written but whose reply was lost leaves no seat in the organizer's block", async () => {
  const { eventUri, tierId } = await pricedTier(10)
  const cut = configureTicketTiers(repliesLost(), APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, 4)] })
  await expect(cut).rejects.toThrow('connection closed before the reply')
  // the six seats the cut wrote are deleted again: the capacity is still 10, not silently 4 after an error
  expect(await models.CapacityUnit.countDocuments({ tierId })).toBe(0)
  expect(await tierCapacity(d, (await models.Tier.findById(tierId).lean())!)).toBe(10)
  // the organizer's retry cuts it
  await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(tierId, 4)] })
  expect(await tierCapacity(d, (await models.Tier.findById(tierId).lean())!)).toBe(4)
})

test('a hold whose seats were written but whose reply was lost keeps none of them', async () => {
  const { tierId } = await pricedTier(10)
  const doc = (await models.Tier.findById(tierId).lean())!
  const hold = reserve(repliesLost(), { id: `hold_lost_${randomBytes(4).toString('hex')}`, expiresAt: new Date(clock.now.getTime() + 600_000) }, [{ tierId, seatRange: doc.seatRange, quantity: 3 }])
  await expect(hold).rejects.toThrow('connection closed before the reply')
  expect(await models.CapacityUnit.countDocuments({ tierId })).toBe(0)
  expect(await availableSeats(d, doc)).toBe(10)
})

test('a cut of two tiers whose second fails gives back the first one\'s: the configuration changed nothing', async () => {
  const eventUri = newEventUri()
  const priced = { priceAmount: 1500, currency: 'usd', capacity: 10 }
  const configured = await configureTicketTiers(d, APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [{ name: 'Stalls', ...priced }, { name: 'Balcony', ...priced }] })
  const [first, second] = configured.tiers.map((t) => t.ticketTypeId) as [string, string]
  const cut = configureTicketTiers(repliesLost(d, second), APP, { environment: 'test', eventUri, organizerDid: ORGANIZER, tiers: [tier(first, 4, { name: 'Stalls' }), tier(second, 4, { name: 'Balcony' })] })
  await expect(cut).rejects.toThrow('connection closed before the reply')
  // before, the first tier stayed cut to 4 by a configuration that answered an error
  for (const tierId of [first, second]) {
    expect(await tierCapacity(d, (await models.Tier.findById(tierId).lean())!)).toBe(10)
    expect(await models.CapacityUnit.countDocuments({ tierId })).toBe(0)
  }
})

test('a reservation that fell short deletes the seats it wrote, also one it tried again when the seat map missed its write', async () => {
  const { tierId } = await pricedTier(3)
  const doc = (await models.Tier.findById(tierId).lean())!
  const other = { id: `hold_other_${randomBytes(4).toString('hex')}`, expiresAt: new Date(clock.now.getTime() + 600_000) }
  expect(await reserve(d, other, [{ tierId, seatRange: doc.seatRange, quantity: 2 }])).toEqual({ ok: true })
  // the map shows the three seats free: the hold takes the one free seat, then tries it again in every later round
  const stale = staleSeatMap()
  const hold = { id: `hold_short_${randomBytes(4).toString('hex')}`, expiresAt: new Date(clock.now.getTime() + 600_000) }
  expect(await reserve(stale.d, hold, [{ tierId, seatRange: doc.seatRange, quantity: 2 }])).toEqual({ ok: false, lacking: 'seat', tierId })
  // before, the seat tried again was refused as a duplicate and left out of the undo: it stayed, held by a refused hold
  expect(await models.CapacityUnit.countDocuments({ reservationId: hold.id })).toBe(0)
  expect(await models.CapacityUnit.countDocuments({ reservationId: other.id })).toBe(2)
})

test("a reservation whose reply was lost frees on the seat map only the seats it wrote, never another's", async () => {
  const { tierId } = await pricedTier(3)
  const doc = (await models.Tier.findById(tierId).lean())!
  const other = { id: `hold_other_${randomBytes(4).toString('hex')}`, expiresAt: new Date(clock.now.getTime() + 600_000) }
  expect(await reserve(d, other, [{ tierId, seatRange: doc.seatRange, quantity: 1 }])).toEqual({ ok: true })
  const otherSeat = (await models.CapacityUnit.findOne({ reservationId: other.id }).lean())!.unit
  // the map shows three seats free: the hold sends all three in one insert, the other's refused, and the reply is lost
  const stale = staleSeatMap()
  const hold = { id: `hold_lost_${randomBytes(4).toString('hex')}`, expiresAt: new Date(clock.now.getTime() + 600_000) }
  await expect(reserve(repliesLost(stale.d), hold, [{ tierId, seatRange: doc.seatRange, quantity: 3 }])).rejects.toThrow('connection closed before the reply')
  expect(await models.CapacityUnit.countDocuments({ reservationId: hold.id })).toBe(0)
  expect(await models.CapacityUnit.countDocuments({ reservationId: other.id })).toBe(1)
  // before, the other's seat was told freed too, and availability counted it free until the next rebuild
  expect(stale.freed.sort()).toEqual([0, 1, 2].filter((n) => `${tierId}#${n}` !== otherSeat))
})
