/**
 * tickets.svc.createTicketHold: paid capacity reserved for a buyer under an app order, every item or none, until
 * `expiresAt`, and its hosted checkout (docs/tickets.md, "Holds" and "Paying a hold").
 *
 * Idempotency: one hold per (app, environment, appOrderId), held by a unique index. A repeat with the same buyer and
 * the same items (tier ids and quantities, in any order) gets the same hold, whatever its state; a repeat with other
 * items is refused. The capacity is taken first (capacity.ts, the hold's id as the reservation), then the hold is
 * inserted: among concurrent duplicates the insert decides, and the losers release what they took. Then the
 * payments domain starts the hold's checkout, keyed by the hold id: a retry of a hold whose checkout was never
 * started (the process died between the two) starts it.
 */
import { randomBytes } from 'node:crypto'
import { isCheckoutUrl, MAX_AMOUNT, MAX_DESCRIPTION_LENGTH } from '@svc/checkout-product'
import { ContractError } from '@svc/errors'
import { isDatabaseUnreachable } from '@svc/subgraph-server'
import { isDid } from '@svc/vocabulary'
import { isDuplicateKeyError, type TicketHoldDoc } from '../models'
import { onSale } from './availability'
import { decide, releaseReservation, reserve } from './capacity'
import { nowOf, type HoldCheckout, type ServingTickets } from './context'
import { DUPLICATE_POLL_MS, DUPLICATE_WAIT_MS, sleep } from './duplicates'
import { appEvent, eventTiers, invalid, ticketsEnvironment } from './event-access'

export const MAX_HOLD_ITEMS = 20
export const MAX_HOLD_QUANTITY = 100

export interface HoldRequest {
  environment?: string | null
  eventUri: string
  buyerDid: string
  appOrderId: string
  items: { ticketTypeId: string; quantity: number }[]
  returnUrl?: string | null
  cancelUrl?: string | null
}

export interface HoldView {
  holdId: string
  expiresAt: string
  amount: number
  currency: string
  items: { ticketTypeId: string; quantity: number }[]
}


/** The items as a canonical string: tier ids sorted, each with its quantity. */
export const itemsKey = (items: HoldRequest['items']): string =>
  [...items].sort((a, b) => a.ticketTypeId.localeCompare(b.ticketTypeId)).map((i) => `${i.ticketTypeId}x${i.quantity}`).join(',')

export const holdView = (h: Pick<TicketHoldDoc, '_id' | 'expiresAt' | 'amount' | 'currency'> & { items: HoldRequest['items'] }): HoldView => ({
  holdId: h._id,
  expiresAt: h.expiresAt.toISOString(),
  amount: h.amount,
  currency: h.currency,
  items: h.items.map((i) => ({ ticketTypeId: i.ticketTypeId, quantity: i.quantity })),
})

/** A hold as stored (its items as the request gave them). */
type StoredHold = Omit<TicketHoldDoc, 'items'> & { items: HoldRequest['items'] }

/** The existing hold of this order, if the repeat asks for the same thing; a different ask is refused. */
function sameHold(existing: StoredHold, buyerDid: string, key: string): StoredHold {
  if (existing.buyerDid !== buyerDid || existing.itemsKey !== key) invalid(`appOrderId ${existing.appOrderId} was already used for another hold (another buyer or other items)`)
  return existing
}


/**
 * The hold and its checkout, as the app gets them (the lexicon's output). The hold's expiry job is added once the hold
 * stays: its checkout started, or a refusal that may pass on a retry (one refused for good takes the hold away).
 */
export async function createTicketHold(d: ServingTickets, appDid: string, input: HoldRequest): Promise<{ holdId: string; expiresAt: string; checkout: HoldCheckout }> {
  const started = nowOf(d)
  for (let round = 0; ; round++) {
    const hold = await reserveHold(d, appDid, input)
    // best effort, logged with the request's logger: the hold's expiresAt is what is due, and reads release lapsed holds
    const schedule = async () => {
      if (hold.status !== 'held' || !d.holdExpiry) return
      await d.holdExpiry.schedule(hold._id, hold.expiresAt).catch((err: unknown) => d.logger?.warn({ err, holdId: hold._id }, 'hold expiry: could not schedule the job; the hold lapses on read'))
    }
    try {
      const checkout = await startCheckout(d, appDid, hold)
      await schedule()
      return { holdId: hold._id, expiresAt: hold.expiresAt.toISOString(), checkout }
    } catch (err) {
      if (!refusedForGood(err)) {
        await schedule()
        throw err
      }
      // an earlier call's hold, left for its retry when payments was out of reach, that payments refuses now: it
      // lapsed before this retry came, by payments' clock (which may be ahead of this process's), or payments' rules
      // changed meanwhile. It is gone now, so the order is judged as a first call, as documented
      if (round === 0 && hold.createdAt < started) continue
      // this call's own hold lapsed before its checkout could start (the database stalled for longer than the event's
      // hold, 60 s at least): nothing the app sent is wrong, and its retry holds anew (the hold is gone)
      if (hold.expiresAt <= nowOf(d)) throw new ContractError('ServiceUnavailable', 'the service was too slow to start the checkout before the hold lapsed; retry')
      throw err
    }
  }
}

/** A refusal of the hold's checkout that no retry passes: bad input, or no processor for the environment. */
function refusedForGood(err: unknown): boolean {
  return err instanceof ContractError && (err.status === 400 || err.code === 'ProcessorNotConfigured')
}

/**
 * The hold's checkout. One the payments domain refuses for good (its rules on the amount, the fees, the URLs) can never
 * be paid, so the hold's capacity goes back at once rather than at its expiry, and the hold goes: the order id is free
 * again, so a repeat is judged as a first call (the same body refused the same way; a corrected one, say shorter
 * URLs or a tier the organizer repriced, held). A refusal that may pass on a retry (the payments domain out of reach)
 * leaves the hold for the retry.
 */
async function startCheckout(d: ServingTickets, appDid: string, hold: StoredHold): Promise<HoldCheckout> {
  try {
    return await d.checkouts.start({
      appDid,
      environment: hold.environment,
      holdId: hold._id,
      organizerDid: hold.organizerDid,
      description: hold.description,
      amount: hold.amount,
      tickets: hold.items.reduce((sum, i) => sum + i.quantity, 0),
      currency: hold.currency,
      expiresAt: hold.expiresAt,
      returnUrl: hold.returnUrl ?? null,
      cancelUrl: hold.cancelUrl ?? null,
    })
  } catch (err) {
    // a checkout refused for good returns the seats at once; released only when not kept: a kept reservation is a
    // checkout already being paid
    if (refusedForGood(err)) {
      // no checkout was started (payments answers a started one before any check), so nothing refers to the hold
      if (await releaseReservation(d, hold._id)) await d.models.TicketHold.deleteOne({ _id: hold._id })
    }
    throw err
  }
}

/** The hold's description on its checkout: its items, cut to what a checkout shows. */
function holdDescription(items: string[]): string {
  const whole = items.join(', ')
  const chars = [...whole]
  return chars.length <= MAX_DESCRIPTION_LENGTH ? whole : `${chars.slice(0, MAX_DESCRIPTION_LENGTH - 1).join('')}…`
}

/** Reserves the hold's capacity and records the hold (or finds the same hold again). */
export async function holdTickets(d: ServingTickets, appDid: string, input: HoldRequest): Promise<HoldView> {
  return holdView(await reserveHold(d, appDid, input))
}

async function reserveHold(d: ServingTickets, appDid: string, input: HoldRequest): Promise<StoredHold> {
  if (!isDid(input.buyerDid)) invalid('buyerDid must be a DID')
  if (input.appOrderId === '' || input.appOrderId.length > 256) invalid('appOrderId must be 1 to 256 characters')
  if (input.items.length === 0 || input.items.length > MAX_HOLD_ITEMS) invalid(`items must hold 1 to ${MAX_HOLD_ITEMS} tiers`)
  for (const [i, item] of input.items.entries()) {
    if (!Number.isInteger(item.quantity) || item.quantity < 1 || item.quantity > MAX_HOLD_QUANTITY) invalid(`items[${i}].quantity must be an integer from 1 to ${MAX_HOLD_QUANTITY}`)
  }
  if (new Set(input.items.map((i) => i.ticketTypeId)).size !== input.items.length) invalid('a ticketTypeId appears twice in items')
  for (const field of ['returnUrl', 'cancelUrl'] as const) {
    const url = input[field]
    if (url != null && !isCheckoutUrl(url)) invalid(`${field} must be an absolute http(s) URL without credentials or whitespace`)
  }

  const environment = await ticketsEnvironment(d, appDid, input.environment ?? null)
  const deadline = Date.now() + DUPLICATE_WAIT_MS
  for (let attempt = 0; ; attempt++) {
    const held = await tryHold(d, appDid, environment, input, attempt < BUYER_CONTENTION_RETRIES)
    if (typeof held !== 'string') return held
    // a duplicate of this order holds the capacity it needs and has not inserted its hold yet; or duplicates took
    // parts of the buyer's shares each and all let go: try again after a random pause
    if (Date.now() > deadline) throw new ContractError('ServiceUnavailable', 'the same hold is still being created; retry')
    await sleep(held === 'in flight' ? DUPLICATE_POLL_MS : 10 + Math.floor(Math.random() * 50))
  }
}

/**
 * A hold attempt takes its units, then inserts its hold, milliseconds apart: units of the same order older than this
 * without a hold are an attempt that died in between (otherwise they would keep the seats and the buyer's shares
 * until the hold's expiry, and a retry of the order would wait for them).
 */
export const HOLD_ATTEMPT_SECONDS = 60

const attemptId = (holdId: string) => `attempt_${holdId}`

/**
 * A retry's verdict on an attempt of its order that looks dead (its newest unit older than HOLD_ATTEMPT_SECONDS, no
 * hold): abandoned, and its units released, unless the attempt decided first to insert its hold (false: it lives).
 */
export async function abandonHoldAttempt(d: ServingTickets, holdId: string): Promise<boolean> {
  if ((await decide(d, attemptId(holdId), 'released')) === 'kept') return false
  await releaseReservation(d, holdId)
  return true
}

/** How often a hold refused only for the buyer's shares is tried again (its concurrent duplicates may have held them). */
const BUYER_CONTENTION_RETRIES = 5

async function tryHold(d: ServingTickets, appDid: string, environment: 'test' | 'live', input: HoldRequest, retryBuyer: boolean): Promise<StoredHold | 'in flight' | 'contended'> {
  const key = itemsKey(input.items)
  const orderKey = `${appDid} ${environment} ${input.appOrderId}`
  const existing = await d.models.TicketHold.findOne({ appDid, environment, appOrderId: input.appOrderId }).lean()
  if (existing) return sameHold(existing, input.buyerDid, key)

  const event = await appEvent(d, appDid, environment, input.eventUri)
  if (!event) invalid('this event has no tiers')
  const tiers = await eventTiers(d, event!, input.items.map((i) => i.ticketTypeId))
  const byId = new Map(tiers.map((t) => [t._id, t]))
  for (const item of input.items) {
    const tier = byId.get(item.ticketTypeId)
    if (!tier) invalid(`ticketTypeId ${item.ticketTypeId} is not a tier of this event`)
    if (tier!.priceAmount === 0) invalid(`tier ${tier!._id} is free: claim its tickets with claimFreeTicket`)
  }
  const currencies = new Set(tiers.map((t) => t.currency))
  if (currencies.size > 1) invalid('the items are priced in different currencies')
  const now = nowOf(d)
  for (const tier of tiers) if (!onSale(tier, now)) throw new ContractError('TicketHoldUnavailable', `tier ${tier._id} is not on sale now`)
  // more than one buyer may ever hold: refused before any share is taken and given back
  for (const item of input.items) {
    const limit = byId.get(item.ticketTypeId)!.perBuyerLimit
    if (item.quantity > limit) throw new ContractError('TicketHoldUnavailable', `the buyer may hold at most ${limit} tickets of tier ${item.ticketTypeId}`)
  }
  // what one checkout may charge, checked before any seat is taken
  const amount = input.items.reduce((sum, i) => sum + byId.get(i.ticketTypeId)!.priceAmount * i.quantity, 0)
  if (amount > MAX_AMOUNT) invalid(`the items cost ${amount} ${tiers[0]!.currency} (minor units), more than one checkout may charge (${MAX_AMOUNT})`)

  const holdId = `hold_${randomBytes(12).toString('hex')}`
  const expiresAt = new Date(now.getTime() + event!.holdDurationSeconds * 1000)
  const result = await reserve(
    d,
    { id: holdId, expiresAt, buyerDid: input.buyerDid, orderKey },
    input.items.map((item) => {
      const tier = byId.get(item.ticketTypeId)!
      return { tierId: tier._id, seatRange: tier.seatRange, quantity: item.quantity, buyer: { did: input.buyerDid, perBuyerLimit: tier.perBuyerLimit, shareRange: tier.shareRange ?? undefined } }
    }),
  )
  if (!result.ok) {
    // judged by its newest unit: a slow attempt takes its units over time, and its first may be old while it lives
    const twin = await d.models.CapacityUnit.findOne({ orderKey }, { reservationId: 1, createdAt: 1 }).sort({ createdAt: -1 }).lean()
    if (twin && twin.createdAt.getTime() > now.getTime() - HOLD_ATTEMPT_SECONDS * 1000) return 'in flight'
    if (twin) {
      // its attempt died between taking the capacity and inserting the hold: let its units go and try again; unless
      // it is alive after all and already on its way to insert its hold (then its hold is waited for)
      return (await abandonHoldAttempt(d, twin.reservationId)) ? 'contended' : 'in flight'
    }
    if (result.lacking === 'buyer' && retryBuyer) return 'contended'
    const tier = byId.get(result.tierId)!
    throw new ContractError(
      'TicketHoldUnavailable',
      result.lacking === 'seat' ? `not enough tickets of tier ${tier._id} are left` : `the buyer may hold at most ${tier.perBuyerLimit} tickets of tier ${tier._id}`,
    )
  }

  const hold = {
    _id: holdId,
    appDid,
    environment,
    eventUri: input.eventUri,
    appOrderId: input.appOrderId,
    buyerDid: input.buyerDid,
    items: input.items.map((i) => ({ ticketTypeId: i.ticketTypeId, quantity: i.quantity })),
    itemsKey: key,
    amount,
    currency: tiers[0]!.currency,
    description: holdDescription(input.items.map((i) => `${i.quantity} × ${byId.get(i.ticketTypeId)!.name}`)),
    organizerDid: event!.organizerDid,
    returnUrl: input.returnUrl ?? null,
    cancelUrl: input.cancelUrl ?? null,
    status: 'held',
    checkoutId: null,
    paymentUri: null,
    expiresAt,
    createdAt: now,
  } satisfies StoredHold
  // this attempt goes on to insert its hold, unless a retry took it for dead and let its units go first (a hold then
  // could never keep its seats, nor be paid): one insert-only decision, so never both
  if ((await whileDatabaseAway(d, holdId, 'hold attempt not decided', () => decide(d, attemptId(holdId), 'kept'))) === 'released') {
    await releaseReservation(d, holdId)
    return 'contended'
  }
  try {
    await insertDecidedHold(d, hold)
    return hold
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err
    const winner = await d.models.TicketHold.findOne({ appDid, environment, appOrderId: input.appOrderId }).lean()
    if (!winner) throw err
    // this attempt's own insert, which landed though its answer was lost (a connection reset): it stands
    if (winner._id === holdId) return winner
    // a concurrent duplicate inserted its hold first: this attempt's capacity goes back
    await releaseReservation(d, holdId)
    return sameHold(winner, input.buyerDid, key)
  }
}

/** How long an attempt keeps trying its decision and its hold's insert while the database is away (as a start waits for it). */
const DECIDED_HOLD_INSERT_MS = 60_000

/**
 * Inserts the hold of an attempt that decided to insert it. Nothing else will (a retry of the order waits for a hold
 * so decided, never lets its units go), so a database away for a moment is waited out: an insert that failed then
 * left the order answering "still being created" until its units lapsed.
 */
function insertDecidedHold(d: ServingTickets, hold: StoredHold): Promise<unknown> {
  return whileDatabaseAway(d, hold._id, 'hold not inserted', () => d.models.TicketHold.create(hold))
}

/**
 * Runs a write of a hold attempt again while the database is away, up to DECIDED_HOLD_INSERT_MS. Both the decision
 * and the hold's insert can land with their answer lost (a connection reset): given up on, the decision left the
 * order's retries answering "still being created" until the units lapsed; run again, it reads what landed.
 */
async function whileDatabaseAway<T>(d: ServingTickets, holdId: string, what: string, write: () => Promise<T>): Promise<T> {
  const giveUpAt = Date.now() + DECIDED_HOLD_INSERT_MS
  for (let pause = 100; ; pause = Math.min(pause * 2, 5000)) {
    try {
      return await write()
    } catch (err) {
      if (!isDatabaseUnreachable(err) || Date.now() >= giveUpAt) throw err
      d.logger?.warn({ err, holdId }, `${what}: the database is away; trying again`)
      await sleep(pause)
    }
  }
}
