/**
 * Tier setup, availability and free claims through the whole stack (adapter → gateway → tickets subgraph, which
 * reads the app's environment and tickets module from the apps subgraph → FerretDB): every contract error of these
 * methods, test/live and app isolation, idempotency under concurrent duplicates, and no oversell under a thousand
 * concurrent claims.
 */
import { randomBytes } from 'node:crypto'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { bearer, expectError, expectOk, httpRequest, xrpcPost } from '../adapter/helpers'
import { availability, claim, claimAs, CLAIM, configure, CONFIGURE, enableTickets, eventUriOf, newSigner, setUpEvent, type Signer } from './helpers'

let stack: TestStack
let app: TestApp
let organizer: Signer

const FREE = { name: 'General admission', priceAmount: 0, currency: 'usd', capacity: 5 }
const PAID = { name: 'VIP', priceAmount: 2500, currency: 'usd', capacity: 10 }

beforeAll(async () => {
  stack = await startStack('tickets')
  app = await stack.newApp({ environments: ['test', 'live'] })
  await enableTickets(stack, app, 'test')
  organizer = await newSigner(stack)
})
afterAll(async () => {
  await stack.stop()
})

describe('configureTicketTiers', () => {
  it('creates tiers with their defaults and answers every tier of the event', async () => {
    const eventUri = eventUriOf(organizer)
    const body = await setUpEvent(stack, app, organizer, [FREE, { ...PAID, perBuyerLimit: 4, salesEndAt: '2099-01-01T00:00:00.000Z' }], { eventUri })
    expect(body).toEqual({
      eventUri,
      holdDurationSeconds: 600,
      tiers: [
        { ticketTypeId: expect.stringMatching(/^tier_[0-9a-f]{24}$/), ...FREE, perBuyerLimit: 1 },
        { ticketTypeId: expect.stringMatching(/^tier_[0-9a-f]{24}$/), ...PAID, perBuyerLimit: 4, salesEndAt: '2099-01-01T00:00:00.000Z' },
      ],
    })
  })

  it('updates a tier by ticketTypeId, adds new ones and leaves unlisted tiers unchanged', async () => {
    const first = await setUpEvent(stack, app, organizer, [FREE, PAID])
    const [free, paid] = first.tiers
    const second = await setUpEvent(stack, app, organizer, [{ ...PAID, ticketTypeId: paid!.ticketTypeId, name: 'VIP+', capacity: 20 }, { ...FREE, name: 'Balcony' }], {
      eventUri: first.eventUri,
      holdDurationSeconds: 120,
    })
    expect(second.tiers.map((t: any) => [t.ticketTypeId, t.name, t.capacity])).toEqual([
      [free!.ticketTypeId, 'General admission', 5],
      [paid!.ticketTypeId, 'VIP+', 20],
      [expect.stringMatching(/^tier_/), 'Balcony', 5],
    ])
    expect((second as any).holdDurationSeconds).toBe(120)
  })

  it('a call that creates tiers, sent 6 times in parallel and retried, creates each tier once', async () => {
    const eventUri = eventUriOf(organizer)
    const assertion = await organizer.assertion(CONFIGURE)
    const send = () => configure(stack, app, { environment: 'test', eventUri, organizerDid: organizer.did, organizerAssertionJwt: assertion, tiers: [FREE, PAID] })
    const answers = (await Promise.all(Array.from({ length: 6 }, send))).map((r) => expectOk(r))
    answers.push(expectOk(await send()))
    const ids = answers[0].tiers.map((t: { ticketTypeId: string }) => t.ticketTypeId)
    expect(ids).toHaveLength(2)
    for (const answer of answers) expect(answer.tiers.map((t: { ticketTypeId: string; capacity: number }) => [t.ticketTypeId, t.capacity])).toEqual([[ids[0], 5], [ids[1], 10]])
    expect(expectOk(await availability(stack, app, { eventUri })).items).toEqual([{ ticketTypeId: ids[0], available: 5 }, { ticketTypeId: ids[1], available: 10 }])
    // another call creates its own tiers, even one like a tier the first created
    const another = expectOk(await configure(stack, app, { environment: 'test', eventUri, organizerDid: organizer.did, organizerAssertionJwt: assertion, tiers: [FREE] }))
    expect(another.tiers.map((t: { ticketTypeId: string }) => t.ticketTypeId)).toEqual([...ids, expect.not.stringMatching(new RegExp(`^(${ids.join('|')})$`))])
    // and so does one that renames the tier that call made and adds one like it: the rename stays, the tier is new
    const made = another.tiers[2].ticketTypeId
    const renamed = expectOk(
      await configure(stack, app, { environment: 'test', eventUri, organizerDid: organizer.did, organizerAssertionJwt: assertion, tiers: [{ ...FREE, ticketTypeId: made, name: 'Early bird' }, FREE] }),
    )
    expect(renamed.tiers.map((t: { ticketTypeId: string; name: string }) => [t.ticketTypeId === made, t.name])).toEqual([
      [false, FREE.name],
      [false, PAID.name],
      [true, 'Early bird'],
      [false, FREE.name],
    ])
  })

  it('never lowers a capacity below what is claimed; lowering to exactly that, and raising again, work', async () => {
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ ...FREE, capacity: 10, perBuyerLimit: 1 }])
    const tier = { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }
    for (let i = 0; i < 3; i++) expectOk(await claimAs(stack, app, await newSigner(stack), tier))
    const lower = async (capacity: number) =>
      configure(stack, app, { environment: 'test', eventUri, organizerDid: organizer.did, organizerAssertionJwt: await organizer.assertion(CONFIGURE), tiers: [{ ...FREE, ticketTypeId: tier.ticketTypeId, capacity }] })
    expectError(await lower(2), 400, 'InvalidRequest', /below the 3 tickets/)
    expect(expectOk(await availability(stack, app, { eventUri })).items).toEqual([{ ticketTypeId: tier.ticketTypeId, available: 7 }])
    expect(expectOk(await lower(3)).tiers[0].capacity).toBe(3)
    expect(expectOk(await availability(stack, app, { eventUri })).items).toEqual([{ ticketTypeId: tier.ticketTypeId, available: 0 }])
    expectError(await claimAs(stack, app, await newSigner(stack), tier), 409, 'TicketHoldUnavailable')
    expect(expectOk(await lower(12)).tiers[0].capacity).toBe(12)
    expect(expectOk(await availability(stack, app, { eventUri })).items).toEqual([{ ticketTypeId: tier.ticketTypeId, available: 9 }])
  })

  it('OrganizerAssertionInvalid: absent, signed by someone else, replayed, or an organizer who is not the event\'s authority', async () => {
    const eventUri = eventUriOf(organizer)
    const base = { environment: 'test', eventUri, organizerDid: organizer.did, tiers: [FREE] }
    expectError(await configure(stack, app, base), 400, 'OrganizerAssertionInvalid')
    const stranger = await newSigner(stack)
    expectError(await configure(stack, app, { ...base, organizerAssertionJwt: await stranger.assertion(CONFIGURE) }), 400, 'OrganizerAssertionInvalid')
    expectError(await configure(stack, app, { ...base, organizerAssertionJwt: await organizer.assertion(CLAIM) }), 400, 'OrganizerAssertionInvalid')
    const once = await organizer.assertion(CONFIGURE)
    // refused for its input, then corrected: the organizer's assertion is good for this app's setup of this event
    const { environment: _default, ...leftToDefault } = base
    expectError(await configure(stack, app, { ...leftToDefault, tiers: [{ ...FREE, currency: 'USD' }], organizerAssertionJwt: once }), 400, 'InvalidRequest', /currency/)
    // (the corrected one naming the environment the first left to the default: before, JwtReplayed)
    expectOk(await configure(stack, app, { ...base, organizerAssertionJwt: once }))
    // and for nothing else: another event of the organizer, the same event in the other environment (or with the
    // environment left to the app's default), or another app
    expectError(await configure(stack, app, { ...base, eventUri: eventUriOf(organizer), organizerAssertionJwt: once }), 400, 'OrganizerAssertionInvalid', /JwtReplayed/)
    expectError(await configure(stack, app, { ...base, environment: 'live', organizerAssertionJwt: once }), 400, 'OrganizerAssertionInvalid', /JwtReplayed/)
    const { environment: _, ...byDefault } = base
    expectError(await configure(stack, app, { ...byDefault, organizerAssertionJwt: once }), 400, 'OrganizerAssertionInvalid', /JwtReplayed/)
    const other = await stack.newApp()
    await enableTickets(stack, other)
    expectError(await configure(stack, other, { ...base, organizerAssertionJwt: once }), 400, 'OrganizerAssertionInvalid', /JwtReplayed/)
    // a valid assertion of an organizer who does not own the event
    expectError(
      await configure(stack, app, { ...base, eventUri: eventUriOf(stranger), organizerAssertionJwt: await organizer.assertion(CONFIGURE) }),
      400,
      'OrganizerAssertionInvalid',
      /authority/,
    )
  })

  it('refuses bad tiers and changes nothing', async () => {
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [FREE])
    const send = async (tier: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      configure(stack, app, { environment: 'test', eventUri, organizerDid: organizer.did, organizerAssertionJwt: await organizer.assertion(CONFIGURE), tiers: [tier], ...extra })
    expectError(await send({ ...FREE, currency: 'USD' }), 400, 'InvalidRequest', /currency/)
    expectError(await send({ ...FREE, currency: 'abc' }), 400, 'InvalidRequest', /currency/)
    expectError(await send({ ...FREE, salesStartAt: '2030-01-02T00:00:00Z', salesEndAt: '2030-01-01T00:00:00Z' }), 400, 'InvalidRequest', /salesEndAt/)
    expectError(await send({ ...FREE, ticketTypeId: `tier_${'0'.repeat(24)}` }), 400, 'InvalidRequest', /not a tier of this event/)
    expectError(await send({ ...FREE, capacity: -1 }), 400, 'InvalidRequest')
    expectError(await send({ ...FREE, name: 'n'.repeat(101) }), 400, 'InvalidRequest', /name/)
    expectError(await send({ ...FREE, priceAmount: 5_000_000_000 }), 400, 'InvalidRequest', /priceAmount/)
    expectError(await send({ ...FREE, seats: 3 }), 400, 'InvalidRequest', /seats/)
    expectError(await send(FREE, { holdDurationSeconds: 10 }), 400, 'InvalidRequest')
    // datetimes the lexicon takes whose UTC year is not four digits, so they could never be answered back
    expectError(await send({ ...FREE, salesEndAt: '9999-12-31T23:59:59-12:00' }), 400, 'InvalidRequest', /salesEndAt/)
    expectError(await send({ ...FREE, salesStartAt: '0000-01-01T00:00:00+01:00' }), 400, 'InvalidRequest', /salesStartAt/)
    // a datetime without a zone, which the lexicon takes: read in the process's time zone it would be another instant
    // on another machine (and a retry there would name another tier)
    expectError(await send({ ...FREE, salesStartAt: '2026-06-01T09:00:00' }), 400, 'InvalidRequest', /salesStartAt must be an ISO 8601 datetime with a time zone/)
    expect(expectOk(await availability(stack, app, { eventUri })).items).toEqual([{ ticketTypeId: tiers[0]!.ticketTypeId, available: 5 }])
  })

  it('counts a tier name in graphemes, as the lexicon does', async () => {
    // 100 flags are 200 code points; 100 accented letters written with a combining accent, 200 code points too
    for (const name of ['🇫🇷'.repeat(100), 'e\u0301'.repeat(100)]) {
      const { tiers } = await setUpEvent(stack, app, organizer, [{ ...FREE, name }])
      expect(tiers[0]).toMatchObject({ name })
    }
    expectError(await configure(stack, app, { environment: 'test', eventUri: eventUriOf(organizer), organizerDid: organizer.did, organizerAssertionJwt: await organizer.assertion(CONFIGURE), tiers: [{ ...FREE, name: '🇫🇷'.repeat(101) }] }), 400, 'InvalidRequest', /name/)
  })

  it('TicketsModuleDisabled with the module off; AppUnauthorized in an environment the app lacks and for another app\'s event', async () => {
    const off = await stack.newApp()
    const body = async (env: string, eventUri = eventUriOf(organizer)) => ({ environment: env, eventUri, organizerDid: organizer.did, organizerAssertionJwt: await organizer.assertion(CONFIGURE), tiers: [FREE] })
    expectError(await configure(stack, off, await body('test')), 403, 'TicketsModuleDisabled')
    expectError(await configure(stack, off, await body('live')), 403, 'AppUnauthorized')
    const { eventUri } = await setUpEvent(stack, app, organizer, [FREE])
    const other = await stack.newApp()
    await enableTickets(stack, other)
    expectError(await configure(stack, other, await body('test', eventUri)), 403, 'AppUnauthorized', /another app/)
  })
})

describe('getTicketAvailability', () => {
  it('EventRequired without eventUri; an event without tiers has no items', async () => {
    expectError(await availability(stack, app, {}), 400, 'EventRequired')
    expectError(await availability(stack, app, { eventUri: '' }), 400, 'EventRequired')
    const eventUri = eventUriOf(organizer)
    expect(expectOk(await availability(stack, app, { eventUri }))).toEqual({ eventUri, items: [] })
  })

  it('is 0 outside the sale window', async () => {
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [
      { ...FREE, salesStartAt: '2099-01-01T00:00:00Z' },
      { ...FREE, salesEndAt: '2000-01-01T00:00:00Z' },
      FREE,
    ])
    expect(expectOk(await availability(stack, app, { eventUri })).items.map((i: any) => i.available)).toEqual([0, 0, 5])
    expectError(await claimAs(stack, app, await newSigner(stack), { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }), 409, 'TicketHoldUnavailable', /not on sale/)
  })

  it('test and live never meet; another app never sees the event; the module must be on', async () => {
    const { eventUri } = await setUpEvent(stack, app, organizer, [FREE])
    // live: the same event URI is another event there (no tiers), and the module is off in live
    expectError(await availability(stack, app, { eventUri, environment: 'live' }), 403, 'TicketsModuleDisabled')
    await enableTickets(stack, app, 'live')
    expect(expectOk(await availability(stack, app, { eventUri, environment: 'live' })).items).toEqual([])
    const other = await stack.newApp()
    await enableTickets(stack, other)
    expectError(await availability(stack, other, { eventUri }), 403, 'AppUnauthorized')
    const unregistered = await stack.newApp({ environments: [] })
    expectError(await availability(stack, unregistered, { eventUri }), 403, 'AppUnauthorized')
  })
})

describe('claimFreeTicket', () => {
  it('issues a ticket; a retry with the same key (and the same assertion) returns it; another key is DuplicateClaim', async () => {
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [FREE])
    const tier = { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }
    const buyer = await newSigner(stack)
    const assertion = await buyer.assertion(CLAIM)
    const first = expectOk(await claimAs(stack, app, buyer, tier, { idempotencyKey: 'k1', assertion }))
    expect(first).toEqual({ ticket: { id: expect.stringMatching(/^ticket_[0-9a-f]{24}$/), status: 'issued', url: expect.stringMatching(new RegExp(`^${stack.checkoutUrl}/checkout/tkp_`)) } })
    expect(expectOk(await claimAs(stack, app, buyer, tier, { idempotencyKey: 'k1', assertion }))).toEqual(first)
    expectError(await claimAs(stack, app, buyer, tier, { idempotencyKey: 'k2', assertion }), 400, 'BuyerAssertionInvalid', /JwtReplayed/)
    expectError(await claimAs(stack, app, buyer, tier, { idempotencyKey: 'k2' }), 409, 'DuplicateClaim')
    expect(expectOk(await availability(stack, app, { eventUri })).items[0].available).toBe(4)
  })

  it('a claim without idempotencyKey (the contract names no such field) is keyed by app, event, tier and buyer: its 10 concurrent copies and a retry get one ticket', async () => {
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ ...FREE, perBuyerLimit: 3 }])
    const buyer = await newSigner(stack)
    const assertion = await buyer.assertion(CLAIM)
    const body = { environment: 'test', eventUri, ticketTypeId: tiers[0]!.ticketTypeId, buyerDid: buyer.did, buyerAssertionJwt: assertion }
    const results = await Promise.all(Array.from({ length: 10 }, () => claim(stack, app, body)))
    const ids = new Set(results.map((r) => expectOk(r).ticket.id))
    expect(ids.size).toBe(1)
    expect(expectOk(await claim(stack, app, body)).ticket.id).toBe([...ids][0])
    expect(await stack.tickets.Ticket.countDocuments({ tierId: tiers[0]!.ticketTypeId })).toBe(1)
    // one seat taken: a losing copy left none held
    expect(expectOk(await availability(stack, app, { eventUri })).items[0].available).toBe(FREE.capacity - 1)
    // a keyed claim of the same buyer is another claim (the tier allows the buyer 3); an empty key is still refused
    expect(expectOk(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }, { idempotencyKey: 'keyed' })).ticket.id).not.toBe([...ids][0])
    expectError(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }, { idempotencyKey: '' }), 400, 'InvalidRequest')
  })

  it('a retry that names the environment the first call left to the default carries the same assertion and gets the ticket', async () => {
    // an app configured for test only: a call without `environment` acts in test
    const testOnly = await stack.newApp({ environments: ['test'] })
    await enableTickets(stack, testOnly, 'test')
    const { eventUri, tiers } = await setUpEvent(stack, testOnly, organizer, [FREE])
    const buyer = await newSigner(stack)
    const body = { eventUri, ticketTypeId: tiers[0]!.ticketTypeId, buyerDid: buyer.did, buyerAssertionJwt: await buyer.assertion(CLAIM), idempotencyKey: 'env-default' }
    const first = expectOk(await claim(stack, testOnly, body))
    expect(expectOk(await claim(stack, testOnly, { ...body, environment: 'test' }))).toEqual(first)
  })

  it("answers the buyer's page of the ticket: its QR code, for its page token only", async () => {
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [FREE])
    const buyer = await newSigner(stack)
    const assertion = await buyer.assertion(CLAIM)
    const { ticket } = expectOk(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }, { idempotencyKey: 'page', assertion }))
    const stored = (await stack.tickets.Ticket.findById(ticket.id).lean())!
    expect(ticket.url).toBe(`${stack.checkoutUrl}/checkout/tkp_${ticket.id.slice('ticket_'.length)}_${stored.pageToken!.slice(-32)}`)
    // a retry answers the same page
    expect(expectOk(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }, { idempotencyKey: 'page', assertion })).ticket.url).toBe(ticket.url)

    const page = await httpRequest(ticket.url)
    expect(page.status).toBe(200)
    expect(page.headers.get('referrer-policy')).toBe('no-referrer')
    expect(page.text).toContain('Your ticket')
    expect(page.text).toContain('TEST MODE')
    expect(page.text).toContain(`id="${ticket.id}"`)
    expect(page.text).toContain('General admission')
    expect(page.text).toContain(stored.secret!)
    expect(page.text.match(/<svg /g)).toHaveLength(1)

    // another random part, or this random part with another ticket's id: the invalid-link page, no ticket
    const last = ticket.url.slice(-1)
    for (const url of [ticket.url.slice(0, -1) + (last === 'A' ? 'B' : 'A'), ticket.url.replace(ticket.id.slice('ticket_'.length), '0'.repeat(24))]) {
      const refused = await httpRequest(url)
      expect(refused.status).toBe(404)
      expect(refused.text).toContain('not valid')
      expect(refused.text).not.toContain(stored.secret!)
    }
  })

  it('20 concurrent duplicates of one claim get one ticket and take one seat', async () => {
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [FREE])
    const buyer = await newSigner(stack)
    const assertion = await buyer.assertion(CLAIM)
    const results = await Promise.all(Array.from({ length: 20 }, () => claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }, { idempotencyKey: 'same', assertion })))
    const ids = new Set(results.map((r) => expectOk(r).ticket.id))
    expect(ids.size).toBe(1)
    expect(await stack.tickets.Ticket.countDocuments({ tierId: tiers[0]!.ticketTypeId })).toBe(1)
    // and one ticket.issued for the app
    expect(await stack.tickets.Outbox.countDocuments({ type: 'ticket.issued', 'data.ticketId': [...ids][0] })).toBe(1)
    expect(expectOk(await availability(stack, app, { eventUri })).items[0].available).toBe(4)
  })

  it('20 concurrent duplicates of a claim on the last seat all get its ticket (none is told the tier is sold out)', async () => {
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ ...FREE, capacity: 1 }])
    const buyer = await newSigner(stack)
    const assertion = await buyer.assertion(CLAIM)
    const results = await Promise.all(Array.from({ length: 20 }, () => claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }, { idempotencyKey: 'last', assertion })))
    expect(new Set(results.map((r) => expectOk(r).ticket.id)).size).toBe(1)
    expect(await stack.tickets.Ticket.countDocuments({ tierId: tiers[0]!.ticketTypeId })).toBe(1)
    expect(expectOk(await availability(stack, app, { eventUri })).items[0].available).toBe(0)
    // another buyer finds it sold out
    expectError(await claimAs(stack, app, await newSigner(stack), { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }), 409, 'TicketHoldUnavailable')
  })

  it('BuyerAssertionInvalid without an assertion or with another DID\'s; a paid tier is refused; the module must be on; another app\'s event is AppUnauthorized', async () => {
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [FREE, PAID])
    const buyer = await newSigner(stack)
    const free = { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }
    expectError(await claim(stack, app, { environment: 'test', ...free, buyerDid: buyer.did, idempotencyKey: 'x' }), 400, 'BuyerAssertionInvalid')
    const other = await newSigner(stack)
    const othersAssertion = await other.assertion(CLAIM)
    expectError(await claimAs(stack, app, buyer, free, { assertion: othersAssertion, idempotencyKey: 'k' }), 400, 'BuyerAssertionInvalid', /must be/)
    expectError(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[1]!.ticketTypeId }), 400, 'InvalidRequest', /not free/)
    // an id of 100,000 characters is not echoed whole: the message stays short
    const long = await claimAs(stack, app, buyer, { eventUri, ticketTypeId: `tier_${'f'.repeat(100_000)}` })
    expectError(long, 400, 'InvalidRequest', /not a tier of this event/)
    expect(long.body.message.length).toBeLessThanOrEqual(1_000)
    const off = await stack.newApp()
    expectError(await claimAs(stack, off, buyer, free), 403, 'TicketsModuleDisabled')
    const otherApp = await stack.newApp()
    await enableTickets(stack, otherApp)
    expectError(await claimAs(stack, otherApp, buyer, free), 403, 'AppUnauthorized')
    expect(await stack.tickets.Ticket.countDocuments({ tierId: free.ticketTypeId })).toBe(0)
    // the claim that named the wrong buyer spent nothing: corrected, it goes through with the same assertion
    expectOk(await claimAs(stack, app, other, free, { assertion: othersAssertion, idempotencyKey: 'k' }))
  })

  it('a claim refused for its input spends no assertion: corrected, it goes through with the same one; a claim taken keeps it spent', async () => {
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [FREE, PAID])
    const buyer = await newSigner(stack)
    const assertion = await buyer.assertion(CLAIM)
    // a mistyped tier, a paid tier: nothing claimed (before, the assertion was spent for that claim, and the buyer had to sign again)
    expectError(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: `tier_${'0'.repeat(24)}` }, { idempotencyKey: 'fix', assertion }), 400, 'InvalidRequest', /not a tier of this event/)
    expectError(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[1]!.ticketTypeId }, { idempotencyKey: 'fix', assertion }), 400, 'InvalidRequest', /not free/)
    const taken = expectOk(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }, { idempotencyKey: 'fix', assertion }))
    expect(taken.ticket.status).toBe('issued')
    // taken: spent for that claim, whose retry still carries it; any other claim is refused it
    expect(expectOk(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }, { idempotencyKey: 'fix', assertion }))).toEqual(taken)
    expectError(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[1]!.ticketTypeId }, { idempotencyKey: 'fix', assertion }), 400, 'BuyerAssertionInvalid', /JwtReplayed/)
    expectError(await claimAs(stack, app, buyer, { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }, { idempotencyKey: 'other', assertion }), 400, 'BuyerAssertionInvalid', /JwtReplayed/)
  })

  it('a thousand concurrent claims on a 100-seat tier: exactly 100 tickets, the rest TicketHoldUnavailable', async () => {
    const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ ...FREE, capacity: 100 }])
    const tier = { eventUri, ticketTypeId: tiers[0]!.ticketTypeId }
    const buyers = await Promise.all(Array.from({ length: 1000 }, () => newSigner(stack)))
    // every request is signed before the first is sent, so all of them are in flight together; their JWTs live for
    // 290 s (the service allows up to 300), since a slow machine may take a minute to answer the last of them
    const requests = await Promise.all(
      buyers.map(async (b) => ({
        headers: bearer(await app.jwt(CLAIM, { expiresInSeconds: 290 })),
        body: { environment: 'test', ...tier, buyerDid: b.did, buyerAssertionJwt: await b.assertion(CLAIM, 290), idempotencyKey: randomBytes(8).toString('hex') },
      })),
    )
    const started = Date.now()
    const results = await Promise.all(requests.map((r) => xrpcPost(stack, CLAIM, r.body, r.headers)))
    console.info(`1,000 concurrent claims on 100 seats answered in ${Date.now() - started} ms`)
    const byStatus = new Map<string, number>()
    for (const r of results) byStatus.set(`${r.status} ${r.body?.error ?? r.body?.ticket?.status}`, (byStatus.get(`${r.status} ${r.body?.error ?? r.body?.ticket?.status}`) ?? 0) + 1)
    expect(Object.fromEntries(byStatus)).toEqual({ '200 issued': 100, '409 TicketHoldUnavailable': 900 })
    expect(await stack.tickets.Ticket.countDocuments({ tierId: tier.ticketTypeId })).toBe(100)
    expect(await stack.tickets.CapacityUnit.countDocuments({ tierId: tier.ticketTypeId, kind: 'seat' })).toBe(100)
    expect(expectOk(await availability(stack, app, { eventUri })).items[0].available).toBe(0)
  }, 180_000)
})
