/**
 * Collections owned by the tickets subgraph (docs/tickets.md). Every document carries `environment` and the app it
 * belongs to; every read filters on them.
 *
 * FerretDB 1.x has no transactions and its filtered updates are not atomic (it reads, then writes), so every rule
 * that must hold under concurrency is the insert of a document under a unique index:
 *
 *   ticketed_events        one per (environment, eventUri) (`_id`)   the app the organizer authorized owns the event
 *   ticket_tiers           `_id` tier_…                              an event's tiers
 *   capacity_units         one per unit (unique `unit`)              a seat `<tierId>#<n>` (n < capacity) and a buyer's
 *                                                                    share `<tierId>@<buyerDid>#<k>` (k < perBuyerLimit),
 *                                                                    each taken by one reservation (a hold or a ticket)
 *   reservation_outcomes   one per reservation (`_id`)               its single terminal decision: kept or released
 *   ticket_holds           `_id` hold_…, one per (appDid, environment, appOrderId)   holds of paid capacity
 *   tickets                `_id` ticket_…                            issued tickets (a free claim's id derives from its key)
 *   tickets_outbox         one per event id (@svc/outbox)            ticket.issued events
 *
 * A paid hold's tickets derive their ids from the hold (one per item and unit), so issuing them twice is a no-op.
 */
import { Schema, type Connection, type InferSchemaType, type Model } from 'mongoose'
import { ENVIRONMENTS } from '@svc/vocabulary'
import { createOutboxModel, type OutboxModel } from '@svc/outbox'
import { connectDomain, createTurnModel, type TurnModel } from '@svc/subgraph-server'

const ticketedEventSchema = new Schema(
  {
    /** `<environment> <eventUri>` */
    _id: { type: String, required: true },
    appDid: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    eventUri: { type: String, required: true },
    organizerDid: { type: String, required: true },
    holdDurationSeconds: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'ticketed_events', versionKey: false },
)
ticketedEventSchema.index({ appDid: 1, environment: 1 })
ticketedEventSchema.index({ organizerDid: 1, environment: 1 })

const tierSchema = new Schema(
  {
    /** `tier_` + 24 hex characters */
    _id: { type: String, required: true },
    /** the ticketed event's `_id` */
    eventKey: { type: String, required: true },
    appDid: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    eventUri: { type: String, required: true },
    name: { type: String, required: true },
    priceAmount: { type: Number, required: true },
    currency: { type: String, required: true },
    /**
     * seats `<tierId>#0` … `#<seatRange - 1>`; the capacity is seatRange minus the seats the organizer's block holds
     * (lowering the capacity takes free seats into the block, so it can never fall below what is sold and held)
     */
    seatRange: { type: Number, required: true },
    perBuyerLimit: { type: Number, required: true },
    /** the highest perBuyerLimit the tier has had (absent: perBuyerLimit): a buyer's shares are numbered below it */
    shareRange: { type: Number },
    salesStartAt: { type: Date, default: null },
    salesEndAt: { type: Date, default: null },
    /** order of creation, for listing */
    position: { type: Number, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'ticket_tiers', versionKey: false },
)
tierSchema.index({ eventKey: 1 })

export const UNIT_KINDS = ['seat', 'buyer'] as const

const capacityUnitSchema = new Schema(
  {
    /** `<reservationId>/<unit>`: a delete by `_id` can only ever remove this reservation's unit */
    _id: { type: String, required: true },
    /** the unit taken; unique, so no unit is ever taken twice */
    unit: { type: String, required: true },
    kind: { type: String, required: true, enum: UNIT_KINDS },
    tierId: { type: String, required: true },
    /** the attempt that took it: a hold (`hold_…`), a free claim's attempt (`claim_…`) or the organizer's block (`block_…`) */
    reservationId: { type: String, required: true },
    /** the buyer a reservation is for (none for a block) */
    buyerDid: { type: String, default: null },
    /** the ticket a free claim's attempt is for */
    ticketId: { type: String, default: null },
    /** a free claim's attempt: the minute it was taken (ms / 60000), which the stopped-claims sweep reads by equality */
    claimMinute: { type: Number, default: null },
    /** the order a hold is for (`<appDid> <environment> <appOrderId>`): concurrent duplicates find each other by it */
    orderKey: { type: String, default: null },
    /** a reservation not kept by then is released (a hold's expiry; a claim that died before its ticket); far ahead once kept */
    expiresAt: { type: Date, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'capacity_units', versionKey: false },
)
capacityUnitSchema.index({ unit: 1 }, { unique: true })
capacityUnitSchema.index({ tierId: 1 })
capacityUnitSchema.index({ reservationId: 1 })
capacityUnitSchema.index({ ticketId: 1 })
capacityUnitSchema.index({ orderKey: 1 })
capacityUnitSchema.index({ claimMinute: 1 })

export const RESERVATION_OUTCOMES = ['kept', 'released'] as const
export type ReservationOutcome = (typeof RESERVATION_OUTCOMES)[number]

const reservationOutcomeSchema = new Schema(
  {
    /** the reservation's id */
    _id: { type: String, required: true },
    outcome: { type: String, required: true, enum: RESERVATION_OUTCOMES },
    at: { type: Date, required: true },
    /** a void's decision (`void_<ticketId>`) until its ticket is voided and its seat back: only the void writes it */
    pending: { type: Boolean },
  },
  { collection: 'reservation_outcomes', versionKey: false },
)
reservationOutcomeSchema.index({ pending: 1 })

/** A ticket's void decision is the reservation outcome of this id (void-ticket.ts). */
export const VOID_DECISION_PREFIX = 'void_'
export const voidDecisionId = (ticketId: string) => `${VOID_DECISION_PREFIX}${ticketId}`

/** How far a sweep has read, by name: the stopped-claims sweep's last minute whose attempts it has all finished. */
const sweepCursorSchema = new Schema(
  {
    _id: { type: String, required: true },
    minute: { type: Number, required: true },
  },
  { collection: 'sweep_cursors', versionKey: false },
)

/** A hold lapsing at expiresAt is not a state: its reservation is released and it stays `held` (docs/tickets.md). */
export const HOLD_STATUSES = ['held', 'paid', 'released'] as const
export type HoldStatus = (typeof HOLD_STATUSES)[number]

const holdItemSchema = new Schema({ ticketTypeId: { type: String, required: true }, quantity: { type: Number, required: true } }, { _id: false })

const ticketHoldSchema = new Schema(
  {
    /** `hold_` + 24 hex characters; also the id of the reservation holding its units */
    _id: { type: String, required: true },
    appDid: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    eventUri: { type: String, required: true },
    appOrderId: { type: String, required: true },
    buyerDid: { type: String, required: true },
    items: { type: [holdItemSchema], required: true },
    /** the items in canonical order (create-hold.ts, itemsKey): what a repeat of the order must ask for */
    itemsKey: { type: String, required: true },
    /** the sum of the items' prices, in minor units of `currency` */
    amount: { type: Number, required: true },
    /** what its checkout shows the buyer: the items with their tier names */
    description: { type: String, required: true },
    /** the event's organizer: its checkout's recipient */
    organizerDid: { type: String, required: true },
    /** where its checkout sends the buyer; null: the checkout page itself */
    returnUrl: { type: String, default: null },
    cancelUrl: { type: String, default: null },
    currency: { type: String, required: true },
    expiresAt: { type: Date, required: true },
    /** held (until paid or lapsed) → paid (its tickets issued) | released (its checkout failed; its capacity returned) */
    status: { type: String, required: true, enum: HOLD_STATUSES, default: 'held' },
    /** the payment that bought the hold's tickets (its checkout and payment record), once paid */
    checkoutId: { type: String, default: null },
    paymentUri: { type: String, default: null },
    createdAt: { type: Date, required: true },
  },
  { collection: 'ticket_holds', versionKey: false },
)
ticketHoldSchema.index({ appDid: 1, environment: 1, appOrderId: 1 }, { unique: true })

export const TICKET_STATUSES = ['issued', 'checked-in', 'voided'] as const
export type TicketStatus = (typeof TICKET_STATUSES)[number]

const ticketSchema = new Schema(
  {
    /** `ticket_` + 24 hex characters */
    _id: { type: String, required: true },
    appDid: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    eventUri: { type: String, required: true },
    tierId: { type: String, required: true },
    buyerDid: { type: String, required: true },
    /** the reservation whose units the ticket keeps */
    reservationId: { type: String, required: true },
    status: { type: String, required: true, enum: TICKET_STATUSES },
    /** `claim` (claimFreeTicket) or `purchase` (a paid hold) */
    source: { type: String, required: true },
    /** a purchased ticket's hold (`hold_…`, also its reservation) and the app's order id of it */
    holdId: { type: String, default: null },
    appOrderId: { type: String, default: null },
    /**
     * the scan token (`tkt_` + 32 random base64url characters): what the buyer's QR code carries and check-in will
     * look up; shown only on the buyer's ticket page (docs/tickets.md, "The buyer's tickets")
     */
    secret: { type: String, default: null },
    /** the buyer's capability for the ticket's page (ids.ts `newPageToken`); null on tickets issued before pages */
    pageToken: { type: String, default: null },
    /** a purchased ticket's seat and buyer share among its hold's units (what voiding it deletes) */
    unitIds: { type: [String], default: [] },
    voidedAt: { type: Date, default: null },
    /** voided, and its seat not yet back on sale nor `ticket.voided` written: the sweep finishes it (void-ticket.ts) */
    voidPending: { type: Boolean },
    /** its `ticket.issued` is in the outbox (the sweep announces tickets whose claim stopped before) */
    announced: { type: Boolean, required: true, default: false },
    createdAt: { type: Date, required: true },
  },
  { collection: 'tickets', versionKey: false },
)
// a tier's tickets, and the organizer's pages of an event's tickets: oldest first, by time then id
ticketSchema.index({ tierId: 1, createdAt: 1, _id: 1 })
ticketSchema.index({ announced: 1 })
ticketSchema.index({ voidPending: 1 })
ticketSchema.index({ holdId: 1 })
ticketSchema.index({ secret: 1 })

export type TicketedEventDoc = InferSchemaType<typeof ticketedEventSchema>
export type TierDoc = InferSchemaType<typeof tierSchema>
export type CapacityUnitDoc = InferSchemaType<typeof capacityUnitSchema>
export type ReservationOutcomeDoc = InferSchemaType<typeof reservationOutcomeSchema>
export type SweepCursorDoc = InferSchemaType<typeof sweepCursorSchema>
export type TicketDoc = InferSchemaType<typeof ticketSchema>
export type TicketHoldDoc = InferSchemaType<typeof ticketHoldSchema>

export interface TicketsModels {
  TicketedEvent: Model<TicketedEventDoc>
  Tier: Model<TierDoc>
  CapacityUnit: Model<CapacityUnitDoc>
  ReservationOutcome: Model<ReservationOutcomeDoc>
  SweepCursor: Model<SweepCursorDoc>
  /** one configuration of an event at a time (domain/configuration-turns.ts) */
  ConfigurationTurn: TurnModel
  Ticket: Model<TicketDoc>
  TicketHold: Model<TicketHoldDoc>
  Outbox: OutboxModel
}

export async function createTicketsModels(conn: Connection): Promise<TicketsModels> {
  const models: TicketsModels = {
    TicketedEvent: conn.model<TicketedEventDoc>('TicketedEvent', ticketedEventSchema),
    Tier: conn.model<TierDoc>('TicketTier', tierSchema),
    CapacityUnit: conn.model<CapacityUnitDoc>('CapacityUnit', capacityUnitSchema),
    ReservationOutcome: conn.model<ReservationOutcomeDoc>('ReservationOutcome', reservationOutcomeSchema),
    SweepCursor: conn.model<SweepCursorDoc>('SweepCursor', sweepCursorSchema),
    ConfigurationTurn: await createTurnModel(conn, 'ConfigurationTurn', 'configuration_turns'),
    Ticket: conn.model<TicketDoc>('Ticket', ticketSchema),
    TicketHold: conn.model<TicketHoldDoc>('TicketHold', ticketHoldSchema),
    Outbox: await createOutboxModel(conn, 'tickets'),
  }
  await Promise.all([models.TicketedEvent.init(), models.Tier.init(), models.CapacityUnit.init(), models.ReservationOutcome.init(), models.Ticket.init(), models.TicketHold.init()])
  return models
}

export const connectTickets = (mongoUrl: string) => connectDomain(mongoUrl, createTicketsModels)

export { deleteByIds, findEach, isDuplicateKeyError } from '@svc/subgraph-server'
