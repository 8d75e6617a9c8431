/**
 * The bench's tickets row: many buyers claim a scarce free tier at the same moment, through the running service's
 * XRPC API (adapter → gateway → tickets subgraph). It counts the tickets granted (exactly the capacity, never more)
 * and each claim's latency, and checks the database holds exactly as many seats as tickets.
 */
import { randomBytes } from 'node:crypto'
import { generateDidKeyKeypair, mintServiceJwt, type DidKeyKeypair } from '@svc/service-auth'

export interface ScarceClaimsResult {
  buyers: number
  capacity: number
  granted: number
  /** answers other than 200 issued and 409 TicketHoldUnavailable */
  unexpected: number
  p50: number
  p99: number
  seconds: number
}

const CONFIGURE = 'tickets.svc.configureTicketTiers'
const CLAIM = 'tickets.svc.claimFreeTicket'
const UPDATE_CONFIG = 'money.svc.app.updateConfig'

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

/** The parts of the answers this row reads. */
interface Answer {
  error?: string
  ticket?: { status: string }
  tiers?: { ticketTypeId: string }[]
}

async function post(api: string, nsid: string, jwt: string, body: unknown): Promise<{ status: number; body: Answer | undefined }> {
  const res = await fetch(`${api}/${nsid}`, { method: 'POST', headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const text = await res.text()
  return { status: res.status, body: text ? (JSON.parse(text) as Answer) : undefined }
}

/**
 * `api`: `http://host:port/xrpc`; `app`: a registered app (test environment); `countSeats(tierId)`: the seat
 * documents the database holds for the tier.
 */
export async function measureScarceClaims(opts: {
  api: string
  serviceDid: string
  app: DidKeyKeypair
  buyers: number
  capacity: number
  countSeats(tierId: string): Promise<number>
}): Promise<ScarceClaimsResult> {
  const { api, serviceDid, app } = opts
  const appJwt = (lxm: string) => mintServiceJwt({ keypair: app.keypair, iss: app.did, aud: serviceDid, lxm, expiresInSeconds: 290 })
  const on = await post(api, UPDATE_CONFIG, await appJwt(UPDATE_CONFIG), { environment: 'test', modules: { tickets: true } })
  if (on.status !== 200) throw new Error(`tickets bench: updateConfig answered ${on.status} ${JSON.stringify(on.body)}`)
  const organizer = await generateDidKeyKeypair('ES256K')
  const eventUri = `at://${organizer.did}/community.lexicon.calendar.event/${randomBytes(6).toString('hex')}`
  const setup = await post(api, CONFIGURE, await appJwt(CONFIGURE), {
    environment: 'test',
    eventUri,
    organizerDid: organizer.did,
    organizerAssertionJwt: await mintServiceJwt({ keypair: organizer.keypair, iss: organizer.did, aud: serviceDid, lxm: CONFIGURE }),
    tiers: [{ name: 'Bench admission', priceAmount: 0, currency: 'usd', capacity: opts.capacity }],
  })
  if (setup.status !== 200) throw new Error(`tickets bench: configureTicketTiers answered ${setup.status} ${JSON.stringify(setup.body)}`)
  const ticketTypeId = setup.body?.tiers?.[0]?.ticketTypeId
  if (!ticketTypeId) throw new Error(`tickets bench: configureTicketTiers answered no tier: ${JSON.stringify(setup.body)}`)

  // every request is signed before the clock starts: the row measures the service, not the minting
  const requests = await Promise.all(
    Array.from({ length: opts.buyers }, async () => {
      const buyer = await generateDidKeyKeypair('ES256K')
      return {
        jwt: await appJwt(CLAIM),
        body: {
          environment: 'test',
          eventUri,
          ticketTypeId,
          buyerDid: buyer.did,
          buyerAssertionJwt: await mintServiceJwt({ keypair: buyer.keypair, iss: buyer.did, aud: serviceDid, lxm: CLAIM }),
          idempotencyKey: randomBytes(8).toString('hex'),
        },
      }
    }),
  )
  const started = Date.now()
  const answers = await Promise.all(
    requests.map(async (r) => {
      const t0 = performance.now()
      const res = await post(opts.api, CLAIM, r.jwt, r.body)
      return { ms: performance.now() - t0, res }
    }),
  )
  const seconds = (Date.now() - started) / 1000
  const granted = answers.filter((a) => a.res.status === 200 && a.res.body?.ticket?.status === 'issued').length
  const refused = answers.filter((a) => a.res.status === 409 && a.res.body?.error === 'TicketHoldUnavailable').length
  const seats = await opts.countSeats(ticketTypeId)
  if (seats !== granted) throw new Error(`tickets bench: ${granted} tickets granted but ${seats} seats taken`)
  const sorted = answers.map((a) => a.ms).sort((a, b) => a - b)
  return {
    buyers: opts.buyers,
    capacity: opts.capacity,
    granted,
    unexpected: answers.length - granted - refused,
    p50: Math.round(percentile(sorted, 50)),
    p99: Math.round(percentile(sorted, 99)),
    seconds: +seconds.toFixed(1),
  }
}
