/**
 * Until 2026-11-24 each attempt was a document of `delivery_attempts`; now a delivery carries its attempt log. The
 * workers fold what that collection still holds into the deliveries once at start (merged by attempt number, so a
 * fold that is repeated or runs in two processes at once writes the same log), then drop it.
 */
import type { Connection } from 'mongoose'
import type { Logger } from 'pino'
import { ATTEMPT_OUTCOMES, type AttemptDoc, type EventsModels } from './index'

const LEGACY = 'delivery_attempts'

export async function foldLegacyAttempts(conn: Connection, models: EventsModels, log: Logger): Promise<number> {
  const db = conn.db
  if (!db || (await db.listCollections({ name: LEGACY }).toArray()).length === 0) return 0
  const legacy = db.collection<AttemptDoc & { _id: string; deliveryId: string }>(LEGACY)
  const byDelivery = new Map<string, AttemptDoc[]>()
  for await (const { _id: _legacyId, deliveryId, ...a } of legacy.find({}, { projection: { appDid: 0, environment: 0 } })) {
    // an attempt left `sending` by a worker of that version never finished
    const outcome = (ATTEMPT_OUTCOMES as readonly string[]).includes(a.outcome) ? a.outcome : 'interrupted'
    const list = byDelivery.get(deliveryId) ?? []
    list.push({ ...a, outcome, error: outcome === a.outcome ? a.error ?? null : 'the worker stopped during this attempt' })
    byDelivery.set(deliveryId, list)
  }
  for (const [deliveryId, folded] of byDelivery) {
    const d = await models.Delivery.findById(deliveryId, { attempts: 1 }).lean()
    if (!d) continue
    const merged = new Map<number, AttemptDoc>(folded.map((a) => [a.number, a]))
    for (const a of d.attempts ?? []) merged.set(a.number, a)
    const attempts = [...merged.values()].sort((x, y) => x.number - y.number)
    await models.Delivery.updateOne({ _id: deliveryId }, { $set: { attempts } })
  }
  await legacy.drop().catch(() => undefined) // another process may have dropped it first
  log.info({ deliveries: byDelivery.size }, 'delivery attempts folded into their deliveries')
  return byDelivery.size
}
