/**
 * The tickets domain on its own database of the test FerretDB, with a clock the test moves and the app's facts (its
 * environment, the tickets module on) answered here. No checkout is started: paying a hold is tested through the
 * stack (test/e2e/tickets).
 */
import type mongoose from 'mongoose'
import { isolate } from '@svc/testing/src/isolation'
import { connectTickets, type ServingTickets, type TicketsModels } from '../src'

export const APP = 'did:web:app.example.com'
export const ORGANIZER = 'did:plc:organizer0000000000000000'

export async function openTicketsDomain(label: string, clock: { now: Date }): Promise<{ conn: mongoose.Connection; models: TicketsModels; d: ServingTickets; close(): Promise<void> }> {
  const { conn, models } = await connectTickets(isolate(label).mongoUrl)
  const checkouts = { start: () => Promise.reject(new Error('these tests start no checkout')) }
  const d: ServingTickets = { models, now: () => clock.now, checkoutUrl: 'http://checkout.invalid', facts: { ticketsAccess: async () => ({ environment: 'test', ticketsEnabled: true }) }, checkouts }
  return {
    conn,
    models,
    d,
    async close() {
      await conn.dropDatabase().catch(() => undefined)
      await conn.close()
    },
  }
}
