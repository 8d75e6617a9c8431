/**
 * createDelivery's group commit on the real database: the deliveries created at the same moment go in one unordered
 * insertMany, and each caller still gets its own answer: the new delivery, or the stored one when it existed, also
 * when duplicates of one delivery share a batch with new ones.
 */
import mongoose from 'mongoose'
import { createDelivery, createEventsModels, newDeliveryId, type EventsModels, type NewDelivery } from '@svc/events'
import { startFerretDbWithoutBackend } from '@svc/testing'
import { startStack, type TestStack } from '../../stack'

let stack: TestStack
beforeAll(async () => {
  stack = await startStack('create-delivery', { workers: false })
})
afterAll(async () => {
  await stack?.stop()
})

const appDid = 'did:web:batch.example.com'
const delivery = (id: string, n = 0): NewDelivery => ({
  id,
  appDid,
  environment: 'test',
  eventId: null,
  eventType: 'payment.completed',
  source: 'payments',
  createdAt: new Date(),
  data: { n },
})

it('concurrent creates of new and repeated deliveries: one document each, every caller gets it', async () => {
  const ids = Array.from({ length: 10 }, () => newDeliveryId())
  const started = Date.now()
  // each id three times, all in flight together (one batch, or a few)
  const answers = await Promise.all(ids.flatMap((id) => [0, 1, 2].map((copy) => createDelivery(stack.deliveryLog, delivery(id, copy)))))
  expect(answers.map((a) => a._id)).toEqual(ids.flatMap((id) => [id, id, id]))
  expect(await stack.events.Delivery.countDocuments({ _id: { $in: ids } })).toBe(10)
  const stored = await stack.events.Delivery.find({ _id: { $in: ids } }).lean()
  for (const d of stored) {
    // what Delivery.create stored: the schema's defaults and its timestamps
    expect(d).toMatchObject({ appDid, environment: 'test', status: 'pending', attemptCount: 0, run: 1, attempts: [], eventType: 'payment.completed', source: 'payments' })
    expect(d.createdAt.getTime()).toBeGreaterThanOrEqual(started - 1000)
    expect(d.updatedAt.getTime()).toBe(d.createdAt.getTime())
    // every copy answered the one document that was stored (its body is the first insert's)
    for (const a of answers.filter((x) => x._id === d._id)) expect(a.body).toBe(d.body)
  }
})

it('a repeat of a settled delivery answers the stored one, in a batch with new ones', async () => {
  const settled = newDeliveryId()
  await createDelivery(stack.deliveryLog, delivery(settled))
  await stack.events.Delivery.updateOne({ _id: settled }, { $set: { status: 'delivered', attemptCount: 1 } })
  const fresh = Array.from({ length: 5 }, () => newDeliveryId())
  const [again, ...created] = await Promise.all([createDelivery(stack.deliveryLog, delivery(settled)), ...fresh.map((id) => createDelivery(stack.deliveryLog, delivery(id)))])
  expect(again).toMatchObject({ _id: settled, status: 'delivered', attemptCount: 1 })
  expect(created.map((c) => [c._id, c.status])).toEqual(fresh.map((id) => [id, 'pending']))
  expect(await stack.events.Delivery.countDocuments({ _id: { $in: [settled, ...fresh] } })).toBe(6)
})

it('a delivery the schema refuses is refused alone', async () => {
  const good = newDeliveryId()
  const results = await Promise.allSettled([
    createDelivery(stack.deliveryLog, { ...delivery(newDeliveryId()), environment: 'staging' as never }),
    createDelivery(stack.deliveryLog, delivery(good)),
  ])
  expect(results[0].status).toBe('rejected')
  expect(results[1]).toMatchObject({ status: 'fulfilled', value: { _id: good } })
})

it('a batch the database refused as a whole fails every caller: none is told its delivery exists', async () => {
  // FerretDB answers its backend's failure (PostgreSQL out of clients, restarting) as a bulk error naming no
  // document; taken as "no document failed", a test event was acknowledged and a domain event's job completed with
  // no delivery stored (the fault run found both)
  const away = await startFerretDbWithoutBackend()
  const conn = await mongoose.createConnection(`${away.url}create_delivery`, { serverSelectionTimeoutMS: 5000 }).asPromise()
  try {
    // the models are registered at once; their indexes cannot be made on this database
    void createEventsModels(conn).catch(() => undefined)
    const models = { Delivery: conn.model('Delivery'), SigningSecret: conn.model('SigningSecret') } as unknown as EventsModels
    const results = await Promise.allSettled([0, 1, 2].map((n) => createDelivery({ ...stack.deliveryLog, models }, delivery(newDeliveryId(), n))))
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected'])
  } finally {
    await conn.close(true)
    await away.stop()
  }
})
