/**
 * The buyer's tickets on a paid ticket checkout's page: each ticket with a QR code of its scan token (drawn here as
 * inline SVG by `qrcode`), its tier and event. The checkout's browser token is the buyer's capability, as for the
 * rest of the page; the tickets come from the tickets domain (`holdTickets`, for the service `checkout`).
 */
import QRCode from 'qrcode'
import { graphql, type ResultOf } from '@svc/graph'
import { html, raw, type RawHtml } from '../pages/html'

export const HOLD_TICKETS_QUERY = graphql(`query CheckoutHoldTickets($holdId: ID!) {
  holdTickets(holdId: $holdId) { id status ticketTypeId tierName eventUri scanToken }
}`)
export type BuyerTicket = ResultOf<typeof HOLD_TICKETS_QUERY>['holdTickets'][number]

/** The page's "Your tickets" section; empty when there are none yet. */
export async function ticketsSection(tickets: BuyerTicket[]): Promise<RawHtml> {
  if (tickets.length === 0) return raw('')
  const items = await Promise.all(
    tickets.map(async (t) => {
      // the SVG is generated from our own token (base64url characters only), not from input
      const code = t.scanToken ? raw(await QRCode.toString(t.scanToken, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' })) : raw('')
      return html`<li class="ticket" id="${t.id}">
<div class="qr" role="img" aria-label="QR code of ticket ${t.id}">${code}</div>
<p><strong>${t.tierName}</strong> · ${t.status}</p>
<p class="small">${t.eventUri}</p>
<p class="small mono scan-token">${t.scanToken ?? ''}</p>
</li>`
    }),
  )
  return html`<section id="tickets">
<h2>Your tickets</h2>
<p class="small">Show a code at the entrance. Keep this page to yourself: the codes are your tickets.</p>
<ul class="tickets">${items}</ul>
</section>`
}
