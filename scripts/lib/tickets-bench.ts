/**
 * The bench's tickets rows: many buyers ask for a scarce tier at the same moment, through the running service's
 * XRPC API (adapter → gateway → tickets subgraph): `holds` hold a paid tier (tickets.svc.createTicketHold, whose
 * answer includes the checkout started in payments), `claims` claim a free one (tickets.svc.claimFreeTicket). It
 * counts the grants (exactly the capacity, never more) and each request's latency, checks the database holds
 * exactly as many seats as grants, and says where the CPU went: each process's CPU time per request during the crowd.
 */
import { randomBytes } from 'node:crypto'
import { generateDidKeyKeypair, mintServiceJwt, type DidKeyKeypair } from '@svc/service-auth'
import { cpuPerRequest, cpuSnapshot } from './cpu-usage'

export type ScarceCrowd = 'holds' | 'claims'

export interface ScarceCrowdResult {
  crowd: ScarceCrowd
  buyers: number
  capacity: number
  granted: number
  /** answers other than 200 (a hold, an issued ticket) and 409 TicketHoldUnavailable */
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
const UPDATE_CONFIG = 'money.svc.app.updateConfig'

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

/** The parts of the answers this row reads. */
interface Answer {
  error?: string
  ticket?: { status: string }
  holdId?: string
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
export async function measureScarceCrowd(opts: {
  crowd: ScarceCrowd
  api: string
  serviceDid: string
  app: DidKeyKeypair
  buyers: number
  capacity: number
  countSeats(tierId: string): Promise<number>
}): Promise<ScarceCrowdResult> {
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
    tiers: [{ name: 'Bench admission', priceAmount: opts.crowd === 'holds' ? 2500 : 0, currency: 'usd', capacity: opts.capacity }],
  })
  if (setup.status !== 200) throw new Error(`tickets bench: configureTicketTiers answered ${setup.status} ${JSON.stringify(setup.body)}`)
  const ticketTypeId = setup.body?.tiers?.[0]?.ticketTypeId
  if (!ticketTypeId) throw new Error(`tickets bench: configureTicketTiers answered no tier: ${JSON.stringify(setup.body)}`)

  // every request is signed before the clock starts: the row measures the service, not the minting
  const nsid = opts.crowd === 'holds' ? HOLD : CLAIM
  const requests = await Promise.all(
    Array.from({ length: opts.buyers }, async () => {
      const jwt = await appJwt(nsid)
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
      const res = await post(opts.api, nsid, r.jwt, r.body)
      return { ms: performance.now() - t0, res }
    }),
  )
  const seconds = (Date.now() - started) / 1000
  const cpu = cpuPerRequest(cpuBefore, cpuSnapshot(), opts.buyers)
  const granted = answers.filter((a) => a.res.status === 200 && (opts.crowd === 'holds' ? a.res.body?.holdId !== undefined : a.res.body?.ticket?.status === 'issued')).length
  const refused = answers.filter((a) => a.res.status === 409 && a.res.body?.error === 'TicketHoldUnavailable').length
  const seats = await opts.countSeats(ticketTypeId)
  if (seats !== granted) throw new Error(`tickets bench: ${granted} ${opts.crowd} granted but ${seats} seats taken`)
  const sorted = answers.map((a) => a.ms).sort((a, b) => a - b)
  return {
    crowd: opts.crowd,
    buyers: opts.buyers,
    capacity: opts.capacity,
    granted,
    unexpected: answers.length - granted - refused,
    p50: Math.round(percentile(sorted, 50)),
    p99: Math.round(percentile(sorted, 99)),
    seconds: +seconds.toFixed(1),
    cpu,
  }
}
