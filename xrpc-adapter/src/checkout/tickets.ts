/**
 * The buyer's tickets, each with a QR code of its scan token (drawn here as inline SVG by `qrcode`), its tier and
 * event, on two pages of the checkout host:
 * - a paid ticket checkout's page, once paid: the checkout's browser token is the buyer's capability (`holdTickets`);
 * - a ticket's own page, `/checkout/<page token>` (`ticket.url` of a free claim): the page token is (`ticketPage`).
 * The tickets come from the tickets domain, asked as the service `checkout`.
 */
import QRCode from 'qrcode'
import { graphql, type ResultOf } from '@svc/graph'
import { html, page, raw, type HtmlResponse, type RawHtml } from '../pages/html'

export const BUYER_TICKET_FIELDS = graphql(`fragment BuyerTicketFields on BuyerTicket { id environment status ticketTypeId tierName eventUri scanToken }`)
export type BuyerTicket = ResultOf<typeof BUYER_TICKET_FIELDS>

export const HOLD_TICKETS_QUERY = graphql(`query CheckoutHoldTickets($holdId: ID!) { holdTickets(holdId: $holdId) { ...BuyerTicketFields } }`)
export const TICKET_PAGE_QUERY = graphql(`query CheckoutTicketPage($pageToken: String!) { ticketPage(pageToken: $pageToken) { ...BuyerTicketFields } }`)

/** The page's "Your tickets" section; empty when there are none yet. */
export async function ticketsSection(tickets: BuyerTicket[], opts: { heading?: boolean } = {}): Promise<RawHtml> {
  if (tickets.length === 0) return raw('')
  const items = await Promise.all(
    tickets.map(async (t) => {
      // the SVG is generated from our own token (base64url characters only), not from input; a voided ticket has none
      const token = t.status === 'voided' ? null : t.scanToken
      const code = token ? raw(await QRCode.toString(token, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' })) : raw('')
      return html`<li class="ticket" id="${t.id}">
${token ? html`<div class="qr" role="img" aria-label="QR code of ticket ${t.id}">${code}</div>` : html`<p class="no-code">No code: this ticket is ${t.status}.</p>`}
<p><strong>${t.tierName}</strong> · ${t.status}</p>
<p class="small">${t.eventUri}</p>
<p class="small mono scan-token">${token ?? ''}</p>
</li>`
    }),
  )
  return html`<section id="tickets">
${opts.heading === false ? '' : html`<h2>Your tickets</h2>`}
${tickets.some((t) => t.status !== 'voided' && t.scanToken) ? html`<p class="small">Show a code at the entrance. Keep this page to yourself: the codes are your tickets.</p>` : ''}
<ul class="tickets">${items}</ul>
</section>`
}

/** A ticket's own page: the ticket with its QR code (a voided ticket says so and shows no code). */
export async function ticketPage(ticket: BuyerTicket): Promise<HtmlResponse> {
  const banner = ticket.environment !== 'live' ? html`TEST MODE · a test ticket` : null
  const body = html`<main class="card">
<h1 id="status-heading">Your ticket</h1>
${ticket.status === 'voided' ? html`<p class="alert error" id="status-message">This ticket was voided by the organizer: it is no longer valid.</p>` : ''}
${await ticketsSection([ticket], { heading: false })}
</main>`
  return page({ title: 'Your ticket', body, banner })
}
