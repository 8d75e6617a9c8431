/**
 * `npm run example:tickets`: what an app backend does to give away tickets to a scarce free event, end to end,
 * against a running service (`npm run dev`): register a did:key app in test (what the operator does) and turn its
 * tickets module on; the organizer (a did:key of its own) authorizes the app's tier setup with an assertion; the app
 * reads availability; a buyer claims with an assertion of their own, and the retry with the same claim key gets the
 * same ticket. Paid tickets (holds and checkout) come with tickets.svc.createTicketHold (docs/tickets.md).
 */
import { randomBytes } from 'node:crypto'
import { loadConfig } from '@svc/config'
import { connectApps, registerApp } from '@svc/apps'
import { createSvcClient, generateDidKeyKeypair, mintAssertion } from '@svc/sdk'

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
  const event = await client.configureTicketTiers({
    environment: 'test',
    eventUri,
    organizerDid: organizer.did,
    organizerAssertionJwt: await assertionOf(organizer, 'tickets.svc.configureTicketTiers'),
    tiers: [{ name: 'Free entry', priceAmount: 0, currency: 'usd', capacity: 2 }],
  })
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
  console.log(`4. the buyer claimed: ticket ${ticket.id} ${ticket.status}`)
  const again = await client.claimFreeTicket(claim)
  console.log(`5. the same claim again (same key, same assertion): ticket ${again.ticket.id} ${again.ticket.status}`)
  console.log(`6. available: ${await available()}`)
  if (again.ticket.id !== ticket.id) process.exit(1)
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err)
  console.error('Is the service running? Start it with `npm run dev`.')
  process.exit(1)
})
