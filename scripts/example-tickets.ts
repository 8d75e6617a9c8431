/**
 * `npm run example:tickets`: what an app backend does to give away and to sell tickets to a scarce event, end to
 * end, against a running service (`npm run dev`):
 *   1-6   register a did:key app in test (what the operator does) and turn its tickets module on; the organizer (a
 *         did:key of its own) authorizes the app's tier setup with an assertion; the app reads availability; a buyer
 *         claims a free ticket with an assertion of their own, and the retry with the same claim key gets the same
 *         ticket;
 *   7-11  the app's webhook receiver (a local HTTP server verifying with the SDK); the organizer adds a paid tier; the
 *         app holds two tickets for a buyer and sends them to the hold's checkout URL; the buyer pays there (here the
 *         card form is posted with a test card, as the browser would); the receiver gets the tickets' ticket.issued.
 */
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:http'
import { buffer } from 'node:stream/consumers'
import type { AddressInfo } from 'node:net'
import { loadConfig } from '@svc/config'
import { connectApps, registerApp } from '@svc/apps'
import { createMemoryClaimStore, createSvcClient, createWebhookRequestHandler, generateDidKeyKeypair, mintAssertion, type EventEnvelope } from '@svc/sdk'

async function main() {
  const config = loadConfig()
  const app = await generateDidKeyKeypair('ES256K')
  const { conn, models } = await connectApps(config.mongoUrl)
  await registerApp({ models }, { did: app.did, environment: 'test', appUrl: 'http://localhost:3000', feeShareBps: 250 })
  await conn.close()
  const client = createSvcClient({ baseUrl: config.baseUrl, appDid: app.did, serviceDid: config.serviceDid, keypair: app.keypair })
  await client.updateConfig({ environment: 'test', modules: { tickets: true } })
  console.log(`1. app ${app.did.slice(0, 32)}… registered in test, tickets module on`)

  const organizer = await generateDidKeyKeypair('ES256K')
  const eventUri = `at://${organizer.did}/community.lexicon.calendar.event/${randomBytes(6).toString('hex')}`
  const assertionOf = (who: typeof organizer, nsid: 'tickets.svc.configureTicketTiers' | 'tickets.svc.claimFreeTicket') =>
    mintAssertion({ keypair: who.keypair, did: who.did, serviceDid: config.serviceDid, nsid })
  // the organizer's tier setup, through the app; tiers not listed stay as they are
  const setTiers = async (tiers: { name: string; priceAmount: number; currency: string; capacity: number }[]) =>
    client.configureTicketTiers({
      environment: 'test',
      eventUri,
      organizerDid: organizer.did,
      organizerAssertionJwt: await assertionOf(organizer, 'tickets.svc.configureTicketTiers'),
      tiers,
    })
  const event = await setTiers([{ name: 'Free entry', priceAmount: 0, currency: 'usd', capacity: 2 }])
  const tier = event.tiers[0]!
  console.log(`2. the organizer set up ${eventUri}: tier ${tier.ticketTypeId} "${tier.name}", capacity ${tier.capacity}`)

  const available = async () => (await client.getTicketAvailability({ environment: 'test', eventUri })).items[0]!.available
  console.log(`3. available: ${await available()}`)

  const buyer = await generateDidKeyKeypair('ES256K')
  const claim = {
    environment: 'test',
    eventUri,
    ticketTypeId: tier.ticketTypeId,
    buyerDid: buyer.did,
    buyerAssertionJwt: await assertionOf(buyer, 'tickets.svc.claimFreeTicket'),
    idempotencyKey: `rsvp-${randomBytes(4).toString('hex')}`,
  }
  const { ticket } = await client.claimFreeTicket(claim)
  console.log(`4. the buyer claimed: ticket ${ticket.id} ${ticket.status}; the buyer's page with its QR code: ${ticket.url}`)
  const again = await client.claimFreeTicket(claim)
  console.log(`5. the same claim again (same key, same assertion): ticket ${again.ticket.id} ${again.ticket.status}`)
  console.log(`6. available: ${await available()}`)
  if (again.ticket.id !== ticket.id) process.exit(1)

  // 7: the app's receiver; ticket.issued tells the app which tickets a payment issued
  const issued: EventEnvelope<{ ticketId: string; holdId?: string }>[] = []
  const receiver: { handle?: ReturnType<typeof createWebhookRequestHandler> } = {}
  const server = createServer((req, res) => {
    void (async () => {
      const body = await buffer(req)
      const answer = receiver.handle ? await receiver.handle({ rawBody: body, headers: req.headers }) : { status: 503, body: { error: 'NotReady' } }
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body))
    })()
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { webhook } = await client.updateConfig({ environment: 'test', webhookUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/svc` })
  receiver.handle = createWebhookRequestHandler({
    secret: webhook.signingSecret!,
    store: createMemoryClaimStore(),
    handlers: {
      'ticket.issued': async (envelope) => void issued.push(envelope as EventEnvelope<{ ticketId: string; holdId?: string }>),
      // a hold's payment also arrives as payment.completed (with holdId); its tickets are what this app fulfils
      'payment.completed': async () => undefined,
    },
  })
  console.log('7. the app\'s webhook receiver is listening')

  // 8: the organizer adds a paid tier (tiers not listed stay as they are)
  const paid = await setTiers([{ name: 'Front row', priceAmount: 2500, currency: 'usd', capacity: 2 }])
  const frontRow = paid.tiers.find((t) => t.name === 'Front row')!
  console.log(`8. the organizer added tier ${frontRow.ticketTypeId} "${frontRow.name}": ${frontRow.priceAmount} ${frontRow.currency} minor units, capacity ${frontRow.capacity}`)

  // 9: the app holds two tickets under its order id and sends the buyer to the checkout
  const hold = await client.createTicketHold({
    environment: 'test',
    eventUri,
    buyerDid: buyer.did,
    appOrderId: `order-${randomBytes(4).toString('hex')}`,
    items: [{ ticketTypeId: frontRow.ticketTypeId, quantity: 2 }],
  })
  console.log(`9. hold ${hold.holdId} until ${hold.expiresAt}; checkout ${hold.checkout.url.slice(0, 48)}…`)

  // 10: the buyer pays on the hosted checkout page (a browser would submit this form)
  const form = new URLSearchParams({ number: '4242 4242 4242 4242', expMonth: '12', expYear: String(new Date().getFullYear() + 2), cvc: '123', name: 'Bea Buyer' })
  const pay = await fetch(`${hold.checkout.url}/pay`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString(), redirect: 'manual' })
  console.log(`10. the buyer paid on the checkout page (${pay.status}); front row available: ${(await client.getTicketAvailability({ environment: 'test', eventUri })).items.find((i) => i.ticketTypeId === frontRow.ticketTypeId)!.available}`)

  // 11: the tickets reach the app as events
  const deadline = Date.now() + 30_000
  while (issued.filter((e) => e.data.holdId === hold.holdId).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100))
  const bought = issued.filter((e) => e.data.holdId === hold.holdId).map((e) => e.data.ticketId)
  console.log(`11. the receiver got ticket.issued for ${bought.length} tickets of the hold: ${bought.join(', ')}`)
  server.close()
  if (bought.length !== 2) process.exit(1)
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err)
  console.error('Is the service running? Start it with `npm run dev`.')
  process.exit(1)
})
