/**
 * Deliveries of the earlier version kept their attempts in `delivery_attempts`: the workers fold them into the
 * deliveries at start (merged by number with what the delivery already logged; an attempt left `sending` becomes
 * `interrupted`) and drop the collection.
 */
import pino from 'pino'
import { createDelivery, foldLegacyAttempts, newDeliveryId } from '@svc/events'
import { startStack, type TestStack } from '../../stack'
import { attemptsOf } from './helpers/events'

let stack: TestStack
beforeAll(async () => {
  stack = await startStack('legacy-attempts', { workers: false })
})
afterAll(async () => {
  await stack?.stop()
})

it('folds the legacy attempt documents into their deliveries once, and drops the collection', async () => {
  const conn = stack.events.Delivery.db
  const appDid = 'did:web:legacy.example.com'
  const id = newDeliveryId()
  await createDelivery(stack.deliveryLog, { id, appDid, environment: 'test', eventId: null, eventType: 'payment.completed', source: 'payments', createdAt: new Date(), data: {} })
  const at = (n: number) => new Date(Date.parse('2026-11-01T00:00:00Z') + n * 1000)
  // attempt 3 is already in the delivery's own log (written by this version after the upgrade)
  await stack.events.Delivery.updateOne({ _id: id }, { $push: { attempts: { number: 3, run: 1, channel: 'webhook', attemptedAt: at(3), outcome: 'delivered', statusCode: 200 } } })
  const legacy = conn.db!.collection('delivery_attempts')
  await legacy.insertMany([
    { _id: `${id}.2` as never, deliveryId: id, appDid, environment: 'test', number: 2, run: 1, channel: 'webhook', url: null, attemptedAt: at(2), outcome: 'sending' },
    { _id: `${id}.1` as never, deliveryId: id, appDid, environment: 'test', number: 1, run: 1, channel: 'webhook', url: null, attemptedAt: at(1), outcome: 'failed', statusCode: 500, error: 'HTTP 500' },
    { _id: `${newDeliveryId()}.1` as never, deliveryId: newDeliveryId(), appDid, environment: 'test', number: 1, run: 1, attemptedAt: at(1), outcome: 'failed' },
  ])

  const log = pino({ level: 'silent' })
  expect(await foldLegacyAttempts(conn, stack.events, log)).toBe(2)
  const folded = await attemptsOf(stack, id)
  expect(folded.map((a) => [a.number, a.outcome, a.error ?? null, a.statusCode ?? null])).toEqual([
    [1, 'failed', 'HTTP 500', 500],
    [2, 'interrupted', 'the worker stopped during this attempt', null],
    [3, 'delivered', null, 200],
  ])
  expect(await conn.db!.listCollections({ name: 'delivery_attempts' }).toArray()).toEqual([])
  // nothing left to fold: a second start is a no-op
  expect(await foldLegacyAttempts(conn, stack.events, log)).toBe(0)
  expect(await attemptsOf(stack, id)).toHaveLength(3)
})
