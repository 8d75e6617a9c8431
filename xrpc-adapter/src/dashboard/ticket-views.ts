/** The organizer's pages: their ticketed events, and one event's tiers and tickets (void, attendee CSV). */
import type { DashboardSession } from '@svc/dashboard-session'
import { formatMoney } from '../checkout/money'
import { html, type Html } from '../pages/html'
import type { OrganizerEventData, OrganizerEventsData } from './ticket-operations'
import { csrfField, header, type View } from './views'

/**
 * The Void form's confirmation checkbox: required in the form (no script needed), and a post without it voids nothing
 * (the plugin refuses it), as voiding cannot be undone.
 */
export const VOID_CONFIRM_FIELD = 'confirm'

export const eventPath = (eventUri: string): string => `/dashboard/events/view?uri=${encodeURIComponent(eventUri)}`

// the currency's own minor unit, as the checkout page shows it (¥1,000, not 10.00 JPY)
const money = (amount: number, currency: string) => (amount === 0 ? 'free' : formatMoney(amount, currency))

export function eventsPage(s: DashboardSession, data: OrganizerEventsData): View {
  const rows = data.organizerEvents.map((e) => html`<tr><td><a href="${eventPath(e.eventUri)}">${e.eventUri}</a></td><td>${e.appDid}</td><td>${e.createdAt.slice(0, 10)}</td></tr>`)
  return {
    status: 200,
    title: 'Your events',
    body: html`${header(s)}<main><h1>Your ticketed events</h1>
      ${rows.length
        ? html`<table id="events"><thead><tr><th>Event</th><th>Sold through app</th><th>Since</th></tr></thead><tbody>${rows}</tbody></table>`
        : html`<p>No app has set up tickets for an event of yours in ${s.environment} yet.</p>`}
      </main>`,
  }
}

/** An event's page: its tiers and a page of its tickets (`after`: the page's cursor, absent for the first). */
export function eventPage(s: DashboardSession, data: OrganizerEventData, after: string | null): View {
  const e = data.organizerEvent
  const tiers = e.tiers.map(
    (t) => html`<tr id="${t.ticketTypeId}"><td>${t.name}</td><td>${money(t.priceAmount, t.currency)}</td><td>${t.capacity}</td>
      <td class="sold">${t.sold}</td><td class="held">${t.held}</td><td class="available">${t.available}</td></tr>`,
  )
  const { tickets: onPage, nextCursor } = e.ticketPage
  const tickets = onPage.map(
    (t) => html`<tr id="${t.id}"><td><code>${t.id}</code></td><td>${t.tierName}</td><td><code>${t.buyerDid}</code></td><td class="status">${t.status}</td>
      <td>${t.issuedAt.slice(0, 16).replace('T', ' ')}</td>
      <td>${t.status === 'voided'
        ? ''
        : html`<form method="post" action="/dashboard/tickets/${t.id}/void" class="inline">${csrfField(s)}
          <label class="small nowrap"><input type="checkbox" name="${VOID_CONFIRM_FIELD}" value="yes" id="confirm-void-${t.id}" required> I understand<span class="visually-hidden"> that voiding ticket ${t.id} cannot be undone</span></label>
          <button type="submit" class="secondary" id="void-${t.id}" aria-label="Void ticket ${t.id}">Void</button></form>`}</td></tr>`,
  )
  const csv = `/dashboard/events/attendees.csv?uri=${encodeURIComponent(e.eventUri)}`
  return {
    status: 200,
    title: `${e.eventUri} – Tickets`,
    body: html`${header(s)}<main><p><a href="/dashboard/events">All your events</a></p><h1>${e.eventUri}</h1>
      <p>Sold through app <code>${e.appDid}</code> in ${e.environment}.</p>
      <section><h2>Tiers</h2><table id="tiers"><thead><tr><th>Tier</th><th>Price</th><th>Capacity</th><th>Sold</th><th>Held</th><th>Available</th></tr></thead>
      <tbody>${tiers}</tbody></table></section>
      <section><h2>Tickets</h2>
      <p><a href="${csv}" id="attendees-csv">Download the attendee list (CSV)</a></p>
      ${tickets.length
        ? html`<table id="tickets"><thead><tr><th>Ticket</th><th>Tier</th><th>Buyer</th><th>Status</th><th>Issued (UTC)</th><th><span class="visually-hidden">Actions</span></th></tr></thead><tbody>${tickets}</tbody></table>
          <p>${after ? html`<a href="${eventPath(e.eventUri)}" id="first-tickets">First tickets</a> ` : ''}${nextCursor
            ? html`<a href="${`${eventPath(e.eventUri)}&after=${encodeURIComponent(nextCursor)}`}" id="later-tickets">Later tickets</a>`
            : ''}</p>
          <p class="hint">Voiding a ticket returns its seat to sale and tells the app (ticket.voided); it cannot be undone: tick "I understand" next to its Void button first.</p>`
        : html`<p>No tickets${after ? ' after these' : ' yet'}.</p>`}
      </section></main>`,
  }
}

export type { Html }
