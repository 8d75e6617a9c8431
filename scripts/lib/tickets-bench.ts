/**
 * The bench's tickets rows: many buyers ask for a scarce tier at the same moment, through the running service's
 * XRPC API (adapter → gateway → tickets subgraph): `holds` hold a paid tier (tickets.svc.createTicketHold, whose
 * answer includes the checkout started in payments), `claims` claim a free one (tickets.svc.claimFreeTicket). It
 * counts the grants (exactly the capacity, never more) and each request's latency, checks the database holds
 * exactly as many seats as grants, and says where the CPU went: each process's CPU time per request during the crowd.
 * Two floors under them, for the same crowd size: `reads`, as many reads of the tier's availability
 * (tickets.svc.getTicketAvailability) at once, the same three hops and JWT check with no write, each answered with
 * the whole capacity; and `edge`, the same read without its eventUri, answered `400 EventRequired` by the XRPC adapter
 * alone (the HTTP request, the JWT check, the rate limit and the lexicon; no gateway, no domain). No seat is taken.
 * With `sold`, the crowd meets the last seats of a large tier: that many are sold before it (their units written
 * directly) and one availability read builds the tier's seat map, as the reads before a sale would.
 */
import { randomBytes } from 'node:crypto'
import { generateDidKeyKeypair, mintServiceJwt, type DidKeyKeypair } from '@svc/service-auth'
import { cpuPerRequest, cpuSnapshot } from './cpu-usage'

export type ScarceCrowd = 'holds' | 'claims' | 'reads' | 'edge'

export interface ScarceCrowdResult {
  crowd: ScarceCrowd
  buyers: number
  /** the seats left for the crowd */
  capacity: number
  /** seats of the tier sold before the crowd */
  sold: number
  /** holds made, tickets issued; for `reads`, availability answered; for `edge`, EventRequired answered */
  granted: number
  /** answers other than 200 (a hold, an issued ticket, the availability) and 409 TicketHoldUnavailable */
  unexpected: number
  p50: number
  p99: number
  seconds: number
  /** CPU milliseconds per request of each process during the crowd (Linux; cpu-usage.ts), largest first */
  cpu: { label: string; ms: number }[]
}

const CONFIGURE = 'tickets.svc.configureTicketTiers'
const CLAIM = 'tickets.svc.claimFreeTicket'
const HOLD = 'tickets.svc.createTicketHold'
const AVAILABILITY = 'tickets.svc.getTicketAvailability'
const UPDATE_CONFIG = 'money.svc.app.updateConfig'

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

/** The parts of the answers this row reads. */
interface Answer {
  error?: string
  ticket?: { status: string }
  holdId?: string
  tiers?: { ticketTypeId: string }[]
  items?: { ticketTypeId: string; available: number }[]
}

async function post(api: string, nsid: string, jwt: string, body: unknown): Promise<{ status: number; body: Answer | undefined }> {
  return answer(await fetch(`${api}/${nsid}`, { method: 'POST', headers: { authorization: `Bearer ${jwt}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }))
}

async function get(api: string, nsid: string, jwt: string, params: Record<string, string>): Promise<{ status: number; body: Answer | undefined }> {
  return answer(await fetch(`${api}/${nsid}?${new URLSearchParams(params)}`, { headers: { authorization: `Bearer ${jwt}` } }))
}

async function answer(res: Response): Promise<{ status: number; body: Answer | undefined }> {
  const text = await res.text()
  return { status: res.status, body: text ? (JSON.parse(text) as Answer) : undefined }
}

/**
 * `api`: `http://host:port/xrpc`; `app`: a registered app (test environment); `countSeats(tierId)`: the seat
 * documents the database holds for the tier.
 */
export async function measureScarceCrowd(opts: {
  crowd: ScarceCrowd
  api: string
  serviceDid: string
  app: DidKeyKeypair
  buyers: number
  capacity: number
  countSeats(tierId: string): Promise<number>
  /** sells `sold` seats of the tier before the crowd (writes their units) */
  sold?: { seats: number; sell(tierId: string, seats: number): Promise<void> }
}): Promise<ScarceCrowdResult> {
  const sold = opts.sold?.seats ?? 0
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
    tiers: [{ name: 'Bench admission', priceAmount: opts.crowd === 'claims' ? 0 : 2500, currency: 'usd', capacity: opts.capacity + sold }],
  })
  if (setup.status !== 200) throw new Error(`tickets bench: configureTicketTiers answered ${setup.status} ${JSON.stringify(setup.body)}`)
  const ticketTypeId = setup.body?.tiers?.[0]?.ticketTypeId
  if (!ticketTypeId) throw new Error(`tickets bench: configureTicketTiers answered no tier: ${JSON.stringify(setup.body)}`)
  if (opts.sold && sold > 0) {
    await opts.sold.sell(ticketTypeId, sold)
    const read = await get(api, AVAILABILITY, await appJwt(AVAILABILITY), { environment: 'test', eventUri })
    if (read.body?.items?.[0]?.available !== opts.capacity) throw new Error(`tickets bench: after selling ${sold} seats, availability answered ${JSON.stringify(read.body)}`)
  }

  // every request is signed before the clock starts: the row measures the service, not the minting
  const nsid = { holds: HOLD, claims: CLAIM, reads: AVAILABILITY, edge: AVAILABILITY }[opts.crowd]
  const requests = await Promise.all(
    Array.from({ length: opts.buyers }, async () => {
      const jwt = await appJwt(nsid)
      if (opts.crowd === 'reads') return { jwt, body: { environment: 'test', eventUri } }
      if (opts.crowd === 'edge') return { jwt, body: { environment: 'test' } }
      if (opts.crowd === 'holds') {
        const body = { environment: 'test', eventUri, buyerDid: `did:plc:${randomBytes(12).toString('hex')}`, appOrderId: randomBytes(8).toString('hex'), items: [{ ticketTypeId, quantity: 1 }] }
        return { jwt, body }
      }
      const buyer = await generateDidKeyKeypair('ES256K')
      return {
        jwt,
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
  const cpuBefore = cpuSnapshot()
  const started = Date.now()
  const answers = await Promise.all(
    requests.map(async (r) => {
      const t0 = performance.now()
      const res = opts.crowd === 'reads' || opts.crowd === 'edge' ? await get(opts.api, nsid, r.jwt, r.body as Record<string, string>) : await post(opts.api, nsid, r.jwt, r.body)
      return { ms: performance.now() - t0, res }
    }),
  )
  const seconds = (Date.now() - started) / 1000
  const cpu = cpuPerRequest(cpuBefore, cpuSnapshot(), opts.buyers)
  const grant = {
    holds: (b: Answer | undefined) => b?.holdId !== undefined,
    claims: (b: Answer | undefined) => b?.ticket?.status === 'issued',
    reads: (b: Answer | undefined) => b?.items?.[0]?.ticketTypeId === ticketTypeId && b.items[0].available === opts.capacity,
    edge: (b: Answer | undefined) => b?.error === 'EventRequired',
  }[opts.crowd]
  const granted = answers.filter((a) => a.res.status === (opts.crowd === 'edge' ? 400 : 200) && grant(a.res.body)).length
  const refused = answers.filter((a) => a.res.status === 409 && a.res.body?.error === 'TicketHoldUnavailable').length
  const seats = await opts.countSeats(ticketTypeId)
  const expectedSeats = sold + (opts.crowd === 'reads' || opts.crowd === 'edge' ? 0 : granted)
  if (seats !== expectedSeats) throw new Error(`tickets bench: ${granted} ${opts.crowd} granted after ${sold} sold, but ${seats} seats taken`)
  const sorted = answers.map((a) => a.ms).sort((a, b) => a - b)
  return {
    crowd: opts.crowd,
    buyers: opts.buyers,
    capacity: opts.capacity,
    sold,
    granted,
    unexpected: answers.length - granted - refused,
    p50: Math.round(percentile(sorted, 50)),
    p99: Math.round(percentile(sorted, 99)),
    seconds: +seconds.toFixed(1),
    cpu,
  }
}
