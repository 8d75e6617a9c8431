/**
 * The tickets sweep runs its steps independently: a step that keeps failing (here the stopped-claims step, its
 * cursor unreadable) is logged and holds up none of the others (here the announcement of a ticket whose claim
 * stopped before its event).
 */
import { randomBytes } from 'node:crypto'
import pino from 'pino'
import { ANNOUNCE_GRACE_MS, startTicketsSweeper, type ServingTickets, type TicketsModels } from '../src'
import { APP, ORGANIZER, openTicketsDomain } from './helpers'

let models: TicketsModels
const clock = { now: new Date() }
let d: ServingTickets
let close: () => Promise<void>

beforeAll(async () => {
  ;({ models, d, close } = await openTicketsDomain('tickets-sweeper', clock))
})
afterAll(async () => {
  await close()
})

test('a failing step is logged, and the steps after it still run', async () => {
  const ticketId = `ticket_${randomBytes(12).toString('hex')}`
  const createdAt = new Date(clock.now.getTime() - ANNOUNCE_GRACE_MS - 1000)
  await models.Ticket.create({
    _id: ticketId,
    appDid: APP,
    environment: 'test',
    eventUri: `at://${ORGANIZER}/community.lexicon.calendar.event/sweep`,
    tierId: `tier_${randomBytes(12).toString('hex')}`,
    buyerDid: 'did:plc:buyer',
    reservationId: `claim_${randomBytes(12).toString('hex')}`,
    status: 'issued',
    source: 'claim',
    announced: false,
    createdAt,
  })
  const findById = jest.spyOn(models.SweepCursor, 'findById').mockImplementation(() => {
    throw new Error('cursor unreadable')
  })
  const errors: unknown[] = []
  const logger = pino({ level: 'error' }, { write: (line: string) => void errors.push(JSON.parse(line)) })
  try {
    await startTicketsSweeper(d, 0, logger).runOnce()
  } finally {
    findById.mockRestore()
  }
  expect(errors).toEqual([expect.objectContaining({ step: 'stopped claims', msg: expect.stringContaining('a step failed') })])
  expect((await models.Ticket.findById(ticketId).lean())!.announced).toBe(true)
  expect(await models.Outbox.countDocuments({ 'data.ticketId': ticketId })).toBe(1)
})
