/**
 * Shared helpers of the tickets tests: an organizer and buyers with their own did:key, their assertions, and the
 * tickets methods called through the real XRPC stack. Not a test file itself.
 */
import { randomBytes } from 'node:crypto'
import { generateDidKeyKeypair, mintServiceJwt } from '@svc/service-auth'
import type { TestApp, TestStack } from '../../stack'
import { bearer, expectOk, updateConfig, xrpcGet, xrpcPost, type HttpResult } from '../adapter/helpers'

export const CONFIGURE = 'tickets.svc.configureTicketTiers'
export const AVAILABILITY = 'tickets.svc.getTicketAvailability'
export const CLAIM = 'tickets.svc.claimFreeTicket'

/** A person with a did:key who signs assertions for this service. */
export interface Signer {
  did: string
  /** an assertion for `lxm`, valid 60 s unless `expiresInSeconds` says otherwise (the service takes up to 300) */
  assertion(lxm: string, expiresInSeconds?: number): Promise<string>
}

export async function newSigner(stack: TestStack): Promise<Signer> {
  const { did, keypair } = await generateDidKeyKeypair('ES256K')
  return { did, assertion: (lxm, expiresInSeconds) => mintServiceJwt({ keypair, iss: did, aud: stack.serviceDid, lxm, expiresInSeconds }) }
}

/** An event record of the organizer's repository. */
export const eventUriOf = (organizer: Signer): string => `at://${organizer.did}/community.lexicon.calendar.event/${randomBytes(6).toString('hex')}`

export async function enableTickets(stack: TestStack, app: TestApp, environment: 'test' | 'live' = 'test'): Promise<void> {
  expectOk(await updateConfig(stack, app, { environment, modules: { tickets: true } }))
}

export async function configure(stack: TestStack, app: TestApp, body: Record<string, unknown>): Promise<HttpResult> {
  return xrpcPost(stack, CONFIGURE, body, bearer(await app.jwt(CONFIGURE)))
}

/** Configures an event's tiers as its organizer; returns the response body. */
export async function setUpEvent(
  stack: TestStack,
  app: TestApp,
  organizer: Signer,
  tiers: Record<string, unknown>[],
  extra: Record<string, unknown> = {},
): Promise<{ eventUri: string; tiers: { ticketTypeId: string; capacity: number }[] }> {
  const eventUri = (extra.eventUri as string | undefined) ?? eventUriOf(organizer)
  return expectOk(await configure(stack, app, { environment: 'test', eventUri, organizerDid: organizer.did, organizerAssertionJwt: await organizer.assertion(CONFIGURE), tiers, ...extra }))
}

/** In the test environment unless `params.environment` says otherwise. */
export async function availability(stack: TestStack, app: TestApp, params: Record<string, string>): Promise<HttpResult> {
  return xrpcGet(stack, AVAILABILITY, { environment: 'test', ...params }, bearer(await app.jwt(AVAILABILITY)))
}

export async function claim(stack: TestStack, app: TestApp, body: Record<string, unknown>): Promise<HttpResult> {
  return xrpcPost(stack, CLAIM, body, bearer(await app.jwt(CLAIM)))
}

/** A claim of one free ticket by a buyer, with a fresh assertion unless one is given. */
export async function claimAs(
  stack: TestStack,
  app: TestApp,
  buyer: Signer,
  target: { eventUri: string; ticketTypeId: string },
  opts: { idempotencyKey?: string; assertion?: string } = {},
): Promise<HttpResult> {
  return claim(stack, app, {
    environment: 'test',
    ...target,
    buyerDid: buyer.did,
    buyerAssertionJwt: opts.assertion ?? (await buyer.assertion(CLAIM)),
    idempotencyKey: opts.idempotencyKey ?? randomBytes(8).toString('hex'),
  })
}

export const HOLD = 'tickets.svc.createTicketHold'

export async function hold(stack: TestStack, app: TestApp, body: Record<string, unknown>): Promise<HttpResult> {
  return xrpcPost(stack, HOLD, { environment: 'test', appOrderId: randomBytes(8).toString('hex'), ...body }, bearer(await app.jwt(HOLD)))
}

/**
 * Time passes for the seats of these reservations (as at their expiresAt): their units' expiresAt moves to `at`, and
 * so does the seat map's record of when they lapse (a test that moved only the units would leave the map behind).
 */
export async function lapseSeats(stack: TestStack, reservationIds: string[], at = new Date(Date.now() - 1000)): Promise<void> {
  const units = await stack.tickets.CapacityUnit.find({ reservationId: { $in: reservationIds }, kind: 'seat' }, { tierId: 1, reservationId: 1 }).lean()
  await stack.tickets.CapacityUnit.updateMany({ reservationId: { $in: reservationIds } }, { $set: { expiresAt: at } })
  for (const key of new Set(units.map((u) => `${u.tierId} ${u.reservationId}`))) {
    const [tierId, reservationId] = key.split(' ') as [string, string]
    await stack.ticketsDomain.seatMap!.holding(tierId, reservationId, at)
  }
}
