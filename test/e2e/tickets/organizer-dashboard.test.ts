/**
 * The organizer's dashboard in a real headless Chromium: the organizer signs in, sees their events, an event's
 * tiers with sold / held / available and its tickets with their buyers, voids a ticket (its seat returns to sale and
 * the app gets ticket.voided), and downloads the attendee list as CSV with formula cells escaped. Another organizer
 * and the other environment see none of it.
 */
import { randomBytes } from 'node:crypto'
import type { Browser } from 'playwright-core'
import { DASHBOARD_COOKIE } from '@svc/dashboard-session'
import { launchChromium } from '../adapter/browser'
import { startStack, type TestApp, type TestStack } from '../../stack'
import { expectOk, httpRequest } from '../adapter/helpers'
import { payByForm } from '../adapter/payment-helpers'
import { availability, claimAs, enableTickets, hold, newSigner, setUpEvent, type Signer } from './helpers'

let stack: TestStack
let app: TestApp
let browser: Browser
let organizer: Signer

beforeAll(async () => {
  stack = await startStack('organizer-dashboard')
  app = await stack.newApp()
  await enableTickets(stack, app)
  organizer = await newSigner(stack)
  browser = await launchChromium()
})
afterAll(async () => {
  await browser?.close()
  await stack?.stop()
})

async function soldEvent() {
  // a tier name and an app order id a spreadsheet would run as formulas
  const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [
    { name: '=HYPERLINK("http://evil.example")', priceAmount: 0, currency: 'usd', capacity: 3 },
    { name: 'Balcony', priceAmount: 3000, currency: 'usd', capacity: 4 },
  ])
  const [free, paid] = [tiers[0]!.ticketTypeId, tiers[1]!.ticketTypeId]
  const claimer = await newSigner(stack)
  const claimedTicket = expectOk(await claimAs(stack, app, claimer, { eventUri, ticketTypeId: free })).ticket
  const claimed = claimedTicket.id as string
  const bought = expectOk(await hold(stack, app, { eventUri, buyerDid: 'did:plc:buyer1111111111111111111', appOrderId: `+cmd|calc-${randomBytes(4).toString('hex')}`, items: [{ ticketTypeId: paid, quantity: 2 }] }))
  expect((await payByForm(bought.checkout.url, '4242 4242 4242 4242')).status).toBe(303)
  expectOk(await hold(stack, app, { eventUri, buyerDid: 'did:plc:buyer2222222222222222222', items: [{ ticketTypeId: paid, quantity: 1 }] }))
  return { eventUri, free, paid, claimed, claimedUrl: claimedTicket.url as string, claimer }
}

/** `count` tickets of the event as claims leave them, each with its tier and issue time (stored directly: many, fast). */
function claimedTickets(eventUri: string, count: number, each: (i: number) => { tierId: string; createdAt: Date }) {
  return Array.from({ length: count }, (_, i) => ({
    _id: `ticket_${randomBytes(12).toString('hex')}`,
    appDid: app.did,
    environment: 'test',
    eventUri,
    buyerDid: `did:plc:seeded${i}`,
    reservationId: `claim_seeded${i}`,
    status: 'issued',
    source: 'claim',
    announced: true,
    ...each(i),
  }))
}

it('lists the organizer\'s events and an event\'s tiers and tickets; voiding a ticket returns its seat and tells the app', async () => {
  const { eventUri, free, paid, claimed, claimedUrl } = await soldEvent()
  const context = await browser.newContext()
  const page = await context.newPage()
  await page.goto(`${await stack.dashboardLoginUrl(organizer.did, 'test')}?next=${encodeURIComponent('/dashboard/events')}`)
  await Promise.all([page.waitForURL((u) => u.pathname === '/dashboard/events'), page.click('#sign-in')])
  await Promise.all([page.waitForURL((u) => u.pathname === '/dashboard/events/view'), page.click(`a[href*="${encodeURIComponent(eventUri)}"]`)])

  const row = async (tierId: string) => ({
    sold: await page.textContent(`#${tierId} .sold`),
    held: await page.textContent(`#${tierId} .held`),
    available: await page.textContent(`#${tierId} .available`),
  })
  expect(await row(free)).toEqual({ sold: '1', held: '0', available: '2' })
  expect(await row(paid)).toEqual({ sold: '2', held: '1', available: '1' })
  expect(await page.locator('#tickets tbody tr').count()).toBe(3)
  expect(await page.textContent(`#${claimed} .status`)).toBe('issued')

  await page.check(`#confirm-void-${claimed}`)
  await Promise.all([page.waitForURL((u) => u.pathname === '/dashboard/events/view'), page.click(`#void-${claimed}`)])
  expect(await page.textContent(`#${claimed} .status`)).toBe('voided')
  expect(await page.locator(`#void-${claimed}`).count()).toBe(0)
  expect(await row(free)).toEqual({ sold: '0', held: '0', available: '3' })
  await context.close()

  const ticket = (await stack.tickets.Ticket.findById(claimed).lean())!
  expect(ticket.status).toBe('voided')
  expect(await stack.tickets.CapacityUnit.countDocuments({ reservationId: ticket.reservationId })).toBe(0)
  expect(expectOk(await availability(stack, app, { eventUri })).items.find((i: { ticketTypeId: string }) => i.ticketTypeId === free).available).toBe(3)
  const voided = await stack.tickets.Outbox.find({ type: 'ticket.voided', 'data.ticketId': claimed }).lean()
  expect(voided).toHaveLength(1)
  expect(voided[0]!.data).toMatchObject({ ticketId: claimed, status: 'voided', ticketTypeId: free, eventUri, source: 'claim' })
  // the buyer's page of the ticket says it was voided and shows no code
  const buyerPage = (await httpRequest(claimedUrl)).text
  expect(buyerPage).toContain('voided by the organizer')
  expect(buyerPage).not.toContain('<svg ')
  // nor an empty image a screen reader would announce as a QR code, nor the advice to show one
  expect(buyerPage).not.toContain('class="qr"')
  expect(buyerPage).not.toContain('Show a code at the entrance')
  expect(buyerPage).toContain('No code: this ticket is voided.')
  expect(buyerPage).not.toContain(ticket.secret!)
})

it('voids one ticket of a paid hold: exactly one seat returns, once, however often the form is sent', async () => {
  const { eventUri, paid } = await soldEvent()
  const [first] = await stack.tickets.Ticket.find({ tierId: paid, status: 'issued' }).sort({ _id: 1 }).lean()
  const cookie = await stack.dashboardCookie(organizer.did, 'test')
  const csrf = (await httpRequest(`${stack.checkoutUrl}/dashboard/events/view?uri=${encodeURIComponent(eventUri)}`, { headers: { cookie } })).text.match(/name="csrf" value="([^"]+)"/)![1]!
  const voidIt = () =>
    httpRequest(`${stack.checkoutUrl}/dashboard/tickets/${first!._id}/void`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ csrf, confirm: 'yes' }).toString(),
      redirect: 'manual',
    })
  const answers = await Promise.all([voidIt(), voidIt(), voidIt()])
  expect(answers.map((a) => a.status)).toEqual([303, 303, 303])
  expect(expectOk(await availability(stack, app, { eventUri })).items.find((i: { ticketTypeId: string }) => i.ticketTypeId === paid).available).toBe(2)
  expect(await stack.tickets.Ticket.countDocuments({ tierId: paid, status: 'issued' })).toBe(1)
  expect(await stack.tickets.Outbox.countDocuments({ type: 'ticket.voided', 'data.ticketId': first!._id })).toBe(1)
})

it('the attendee CSV escapes cells that would run as formulas', async () => {
  const { eventUri } = await soldEvent()
  const cookie = await stack.dashboardCookie(organizer.did, 'test')
  const csv = await httpRequest(`${stack.checkoutUrl}/dashboard/events/attendees.csv?uri=${encodeURIComponent(eventUri)}`, { headers: { cookie } })
  expect(csv.status).toBe(200)
  expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8')
  const lines = csv.text.trim().split('\n')
  // every cell quoted: a spreadsheet splitting on ";" cannot cut one into a formula
  expect(lines[0]).toBe('"ticket","tier","buyer","status","source","app order","issued at"')
  expect(lines).toHaveLength(4)
  expect(csv.text).toContain(`"'=HYPERLINK(""http://evil.example"")"`)
  expect(csv.text).toContain(`'+cmd|calc`)
  expect(csv.text).not.toMatch(/(^|[,;])"?[=+\-@]/m)
})

it('a ticket inserted late with an earlier time (a settle that read first) is on a later page, not passed by: a page stops before its tickets of the last minute', async () => {
  const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ name: 'General', priceAmount: 0, currency: 'usd', capacity: 500 }])
  const tierId = tiers[0]!.ticketTypeId
  const now = Date.now()
  const old = claimedTickets(eventUri, 1, () => ({ tierId, createdAt: new Date(now - 120_000) }))
  const fresh = claimedTickets(eventUri, 200, () => ({ tierId, createdAt: new Date(now - 1000) }))
  await stack.tickets.Ticket.insertMany([...old, ...fresh])
  const cookie = await stack.dashboardCookie(organizer.did, 'test')
  const page = async (url: string) => {
    const view = await httpRequest(url, { headers: { cookie } })
    expect(view.status).toBe(200)
    const later = view.text.match(/href="([^"]+)" id="later-tickets"/)?.[1]
    return { ids: [...view.text.matchAll(/<tr id="(ticket_[0-9a-f]{24})"/g)].map((m) => m[1]!), next: later ? `${stack.checkoutUrl}${later.replace(/&amp;/g, '&')}` : null }
  }
  const first = await page(`${stack.checkoutUrl}/dashboard/events/view?uri=${encodeURIComponent(eventUri)}`)
  expect(first.ids).toEqual(old.map((t) => t._id))
  // a settle that took its time before the page was read inserts its ticket now
  const late = claimedTickets(eventUri, 1, () => ({ tierId, createdAt: new Date(now - 2000) }))
  await stack.tickets.Ticket.insertMany(late)
  const seen = [...first.ids]
  for (let next = first.next; next; ) {
    const p = await page(next)
    seen.push(...p.ids)
    next = p.next
  }
  expect(seen.sort()).toEqual([...old, ...fresh, ...late].map((t) => t._id).sort())
})

it('an event\'s tickets come 200 to a page, oldest first, each once (tickets of one instant too); the CSV has them all; a forged cursor is refused', async () => {
  const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [
    { name: 'Early', priceAmount: 0, currency: 'usd', capacity: 500 },
    { name: 'Late', priceAmount: 0, currency: 'usd', capacity: 500 },
  ])
  // 450 tickets as claims leave them, 3 to an instant, alternating tiers
  const start = Date.now() - 3600_000
  const seeded = claimedTickets(eventUri, 450, (i) => ({ tierId: tiers[i % 2]!.ticketTypeId, createdAt: new Date(start + Math.floor(i / 3) * 1000) }))
  await stack.tickets.Ticket.insertMany(seeded)
  const expected = [...seeded].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a._id.localeCompare(b._id)).map((t) => t._id)

  const cookie = await stack.dashboardCookie(organizer.did, 'test')
  const pages: string[][] = []
  let url: string | null = `${stack.checkoutUrl}${`/dashboard/events/view?uri=${encodeURIComponent(eventUri)}`}`
  while (url) {
    const view = await httpRequest(url, { headers: { cookie } })
    expect(view.status).toBe(200)
    pages.push([...view.text.matchAll(/<tr id="(ticket_[0-9a-f]{24})"/g)].map((m) => m[1]!))
    const later = view.text.match(/href="([^"]+)" id="later-tickets"/)?.[1]
    url = later ? `${stack.checkoutUrl}${later.replace(/&amp;/g, '&')}` : null
  }
  expect(pages.map((p) => p.length)).toEqual([200, 200, 50])
  expect(pages.flat()).toEqual(expected)
  // sold counts every ticket, not a page of them
  expect((await httpRequest(`${stack.checkoutUrl}/dashboard/events/view?uri=${encodeURIComponent(eventUri)}`, { headers: { cookie } })).text).toMatch(new RegExp(`id="${tiers[0]!.ticketTypeId}">(.|\\n)*?<td class="sold">225</td>`))

  const csv = await httpRequest(`${stack.checkoutUrl}/dashboard/events/attendees.csv?uri=${encodeURIComponent(eventUri)}`, { headers: { cookie } })
  expect(csv.status).toBe(200)
  const lines = csv.text.trim().split('\n')
  expect(lines).toHaveLength(451)
  expect(lines.slice(1).map((l) => l.split(',')[0]!.replaceAll('"', ''))).toEqual(expected)

  const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
  for (const after of ['nope', forged([1, 'ticket_x']), forged([Number.MAX_SAFE_INTEGER, `ticket_${'0'.repeat(24)}`])]) {
    const refused = await httpRequest(`${stack.checkoutUrl}/dashboard/events/view?uri=${encodeURIComponent(eventUri)}&after=${after}`, { headers: { cookie } })
    expect(refused.status).toBe(400)
    expect(refused.text).toContain('nextCursor')
  }
  const twice = await httpRequest(`${stack.checkoutUrl}/dashboard/events/view?uri=${encodeURIComponent(eventUri)}&after=${forged([start, `ticket_${'0'.repeat(24)}`])}&after=nope`, { headers: { cookie } })
  expect(twice.status).toBe(400)
  expect(twice.text).toContain('given once')
})

it('the attendee CSV of more tickets than one read takes (5,000) comes whole, in order, read page after page', async () => {
  const { eventUri, tiers } = await setUpEvent(stack, app, organizer, [{ name: 'Hall', priceAmount: 0, currency: 'usd', capacity: 10_000 }])
  const start = Date.now() - 3600_000
  const seeded = claimedTickets(eventUri, 5_050, (i) => ({ tierId: tiers[0]!.ticketTypeId, createdAt: new Date(start + i) }))
  for (let i = 0; i < seeded.length; i += 1000) await stack.tickets.Ticket.insertMany(seeded.slice(i, i + 1000))
  const csv = await httpRequest(`${stack.checkoutUrl}/dashboard/events/attendees.csv?uri=${encodeURIComponent(eventUri)}`, { headers: { cookie: await stack.dashboardCookie(organizer.did, 'test') } })
  expect(csv.status).toBe(200)
  const ids = csv.text.trim().split('\n').slice(1).map((l) => l.split(',')[0]!.replaceAll('"', ''))
  expect(ids).toEqual(seeded.map((t) => t._id))
}, 120_000)

it('another organizer, the other environment and a signed-out visitor see nothing of the event', async () => {
  const { eventUri, claimed } = await soldEvent()
  const stranger = await newSigner(stack)
  const view = `${stack.checkoutUrl}/dashboard/events/view?uri=${encodeURIComponent(eventUri)}`
  const as = async (did: string, env: 'test' | 'live') => httpRequest(view, { headers: { cookie: await stack.dashboardCookie(did, env) } })
  const theirs = await as(stranger.did, 'test')
  expect(theirs.status).toBe(404)
  expect(theirs.text).not.toContain(claimed)
  expect((await as(organizer.did, 'live')).status).toBe(404)
  expect((await httpRequest(`${stack.checkoutUrl}/dashboard/events`, { headers: { cookie: await stack.dashboardCookie(stranger.did, 'test') } })).text).not.toContain(eventUri)
  const signedOut = await httpRequest(view, { headers: { cookie: `${DASHBOARD_COOKIE}=nope` } })
  expect(signedOut.text).not.toContain(claimed)
  const csv = await httpRequest(`${stack.checkoutUrl}/dashboard/events/attendees.csv?uri=${encodeURIComponent(eventUri)}`, { headers: { cookie: await stack.dashboardCookie(stranger.did, 'test') } })
  expect(csv.status).toBe(404)
})

it('an event address that is no record URI (a NUL character, a bare repository) is a 404 page, not a failure', async () => {
  const cookie = await stack.dashboardCookie(organizer.did, 'test')
  for (const uri of ['at://a\u0000b', `at://${organizer.did}`, `at://${organizer.did}/community.lexicon.calendar.event/x\u0000`]) {
    for (const path of ['/dashboard/events/view', '/dashboard/events/attendees.csv']) {
      const res = await httpRequest(`${stack.checkoutUrl}${path}?uri=${encodeURIComponent(uri)}`, { headers: { cookie } })
      expect([path, uri, res.status]).toEqual([path, uri, 404])
      expect(res.text).toContain('no such event')
    }
  }
})

it('prices show in their currency\'s own minor unit (yen have none, dinars three)', async () => {
  const { eventUri } = await setUpEvent(stack, app, organizer, [
    { name: 'Yen', priceAmount: 1000, currency: 'jpy', capacity: 2 },
    { name: 'Dinar', priceAmount: 12500, currency: 'kwd', capacity: 2 },
    { name: 'Dollar', priceAmount: 2500, currency: 'usd', capacity: 2 },
  ])
  const view = await httpRequest(`${stack.checkoutUrl}/dashboard/events/view?uri=${encodeURIComponent(eventUri)}`, { headers: { cookie: await stack.dashboardCookie(organizer.did, 'test') } })
  expect(view.status).toBe(200)
  expect(view.text).toContain('¥1,000')
  expect(view.text).toContain('KWD')
  expect(view.text).toContain('12.500')
  expect(view.text).toContain('$25.00')
  expect(view.text).not.toContain('10.00 JPY')
})
