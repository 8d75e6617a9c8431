/**
 * The seat map (docs/tickets.md, "The seat map") only advises, through the whole stack: when Redis loses it, the next
 * read rebuilds it from the units and a crowd still holds exactly the capacity; when it is wrong (a process stopped
 * between a unit's delete and the map's, or the other way), the unique index still refuses a second taker and the
 * sweep's rebuild brings the counts back to the units.
 */
import { randomBytes } from 'node:crypto'
import { reconcileSeatMaps, setSeats } from '@svc/tickets'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectOk } from '../adapter/helpers'
import { availability, enableTickets, hold, lapseSeats, newSigner, setUpEvent } from './helpers'

let stack: TestStack
let app: TestApp

beforeAll(async () => {
  stack = await startStack('seat-map')
  app = await stack.newApp()
  await enableTickets(stack, app)
})
afterAll(async () => {
  await stack.stop()
})

async function paidTier(capacity: number) {
  const { eventUri, tiers } = await setUpEvent(stack, app, await newSigner(stack), [{ name: 'Floor', priceAmount: 4000, currency: 'usd', capacity }])
  return { eventUri, tierId: tiers[0]!.ticketTypeId as string }
}
const buyerDid = () => `did:plc:${randomBytes(12).toString('hex')}`
const available = async (eventUri: string): Promise<number> => expectOk(await availability(stack, app, { eventUri })).items[0].available
const seatUnits = (tierId: string) => stack.tickets.CapacityUnit.find({ tierId, kind: 'seat' }, { unit: 1, reservationId: 1 }).lean()

async function holdMany(eventUri: string, tierId: string, n: number): Promise<string[]> {
  const results = await Promise.all(Array.from({ length: n }, () => hold(stack, app, { eventUri, buyerDid: buyerDid(), items: [{ ticketTypeId: tierId, quantity: 1 }] })))
  for (const r of results) if (r.status !== 200) expect(r.body.error).toBe('TicketHoldUnavailable')
  return results.filter((r) => r.status === 200).map((r) => r.body.holdId as string)
}

/** The seats the map shows taken, and the seat numbers of the units. */
async function mapAndUnits(tierId: string): Promise<{ map: number[]; units: number[] }> {
  const state = await stack.ticketsDomain.seatMap!.read(tierId, new Date())
  const units = (await seatUnits(tierId)).map((u) => Number(u.unit.split('#')[1])).sort((a, b) => a - b)
  return { map: state ? [...setSeats(state.taken, 1_000_000)].sort((a, b) => a - b) : [], units }
}

it('Redis loses the map: the next read rebuilds it from the units, and a crowd after the lapse holds exactly the capacity again', async () => {
  const { eventUri, tierId } = await paidTier(20)
  const first = await holdMany(eventUri, tierId, 60)
  expect(first).toHaveLength(20)
  const before = await mapAndUnits(tierId)
  expect(before.units).toHaveLength(20)
  expect(before.map).toEqual(before.units)
  // the map knows when each of the 20 holds lapses, and nothing of the 40 refused ones
  const due = await stack.redis.zrange(`${stack.redisPrefix}seats:{${tierId}}:due`, 0, -1)
  expect(new Set(due)).toEqual(new Set(first))

  const keys = await stack.redis.keys(`${stack.redisPrefix}seats:*`)
  expect(keys.length).toBeGreaterThan(0)
  await stack.redis.del(...keys)
  expect(await stack.ticketsDomain.seatMap!.read(tierId, new Date())).toBeNull()
  expect(await available(eventUri)).toBe(0)
  expect(await mapAndUnits(tierId)).toEqual(before)

  // the holds lapse, and Redis loses the map again: the rebuild finds which holds lapsed in the units
  await lapseSeats(stack, first)
  await stack.redis.del(...(await stack.redis.keys(`${stack.redisPrefix}seats:*`)))
  const second = await holdMany(eventUri, tierId, 60)
  expect(second).toHaveLength(20)
  expect(new Set((await seatUnits(tierId)).map((u) => u.reservationId))).toEqual(new Set(second))
  const after = await mapAndUnits(tierId)
  expect(after.units).toHaveLength(20)
  expect(after.map).toEqual(after.units)
  expect(await available(eventUri)).toBe(0)
}, 120_000)

it('a map left wrong never sells a seat twice, and the sweep\'s rebuild brings it back to the units', async () => {
  const { eventUri, tierId } = await paidTier(5)
  expect(await holdMany(eventUri, tierId, 3)).toHaveLength(3)
  const { units } = await mapAndUnits(tierId)
  const map = stack.ticketsDomain.seatMap!
  // wrong both ways: the three held seats shown free, and a free seat shown taken
  await map.freed(tierId, units)
  const free = [0, 1, 2, 3, 4].find((n) => !units.includes(n))!
  await map.took(tierId, [free])
  expect(await available(eventUri)).toBe(4)

  // a hold of four trusts the map, meets the index on the held seats, and is refused whole
  const refused = await hold(stack, app, { eventUri, buyerDid: buyerDid(), items: [{ ticketTypeId: tierId, quantity: 4 }] })
  expect(refused.body.error).toBe('TicketHoldUnavailable')
  expect(await seatUnits(tierId)).toHaveLength(3)

  // the reconcile period passes (its marker expires): the sweep rebuilds the map of this tier, read lately
  await stack.redis.del(`${stack.redisPrefix}seats:{${tierId}}:fresh`)
  expect(await reconcileSeatMaps(stack.ticketsDomain)).toBeGreaterThanOrEqual(1)
  expect(await mapAndUnits(tierId)).toEqual({ map: units, units })
  expect(await available(eventUri)).toBe(2)
  expect(await holdMany(eventUri, tierId, 6)).toHaveLength(2)
  expect(await seatUnits(tierId)).toHaveLength(5)
  expect(await available(eventUri)).toBe(0)
}, 120_000)
