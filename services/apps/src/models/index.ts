/**
 * Collections owned by the apps subgraph. Every document carries its app DID and environment;
 * uniqueness that must hold under concurrency rests on unique indexes (FerretDB's filtered
 * updates are not atomic).
 */
import { Schema, type Connection, type InferSchemaType, type Model } from 'mongoose'
import { ENVIRONMENTS } from '@svc/vocabulary'
import { createOutboxModel, type OutboxModel } from '@svc/outbox'
import { createTurnModel, type TurnModel } from '@svc/subgraph-server'

export const API_KEY_PERMISSIONS = [
  'app.config.read',
  'webhook.test.write',
  'webhook.deliveries.read',
  'webhook.deliveries.redrive',
] as const
export type ApiKeyPermission = (typeof API_KEY_PERMISSIONS)[number]

const appSchema = new Schema(
  {
    did: { type: String, required: true, unique: true },
    name: { type: String, default: null },
  },
  { timestamps: true, collection: 'apps' },
)

const appEnvironmentSchema = new Schema(
  {
    appDid: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    status: { type: String, required: true, default: 'active' },
    appUrl: { type: String, required: true },
    feeShareBps: { type: Number, required: true },
    /** where events go (docs/events.md, "Channels"): the chosen channel and its URL; paused holds deliveries */
    webhook: {
      url: { type: String, default: null },
      paused: { type: Boolean, default: false },
      channel: { type: String, enum: ['webhook', 'xrpc'], default: 'webhook' },
      /** the origin of the app's XRPC service (the xrpc channel) */
      receiverUrl: { type: String, default: null },
      /** the events domain has this environment's signing secret (domain/signing-secrets.ts) */
      signingSecretEnsured: { type: Boolean, default: false },
      /**
       * set with paused when the events workers disabled the endpoint (docs/events.md, "Endpoint health"):
       * `gone` (it answered 410) or `failing` (every attempt failed for DELIVERY_DISABLE_AFTER_MS); cleared when the
       * app unpauses it (webhookPaused false)
       */
      disabledReason: { type: String, enum: ['gone', 'failing', null], default: null },
      disabledAt: { type: Date, default: null },
    },
    modules: {
      payments: { type: Boolean, default: true },
      products: { type: Boolean, default: false },
      tickets: { type: Boolean, default: false },
    },
    ticketing: {
      qrPasses: { type: Boolean, default: false },
      walletPasses: { type: Boolean, default: false },
    },
    ticketFee: {
      bps: { type: Number, required: true, default: 0 },
      flatAmount: { type: Number, required: true, default: 0 },
      flatCurrency: { type: String, required: true, default: 'usd' },
      passToBuyer: { type: Boolean, default: false },
    },
  },
  { timestamps: true, collection: 'app_environments' },
)
appEnvironmentSchema.index({ appDid: 1, environment: 1 }, { unique: true })

const apiKeySchema = new Schema(
  {
    keyId: { type: String, required: true, unique: true },
    appDid: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    /** SHA-256 of the whole key; the key itself is shown once and never stored */
    keyHash: { type: String, required: true, unique: true },
    /** the first characters, safe to show in logs and dashboards */
    keyPrefix: { type: String, required: true },
    permissions: { type: [String], required: true },
    revokedAt: { type: Date, default: null },
  },
  { timestamps: true, collection: 'api_keys' },
)
apiKeySchema.index({ appDid: 1, environment: 1 })

const requestLogSchema = new Schema(
  {
    requestId: { type: String, required: true },
    environment: { type: String, default: null },
    appDid: { type: String, default: null },
    method: { type: String, required: true },
    path: { type: String, required: true },
    status: { type: Number, required: true },
    errorCode: { type: String, default: null },
    keyPrefix: { type: String, default: null },
    durationMs: { type: Number, required: true },
  },
  { timestamps: { createdAt: true, updatedAt: false }, collection: 'request_log' },
)
requestLogSchema.index({ environment: 1, appDid: 1, createdAt: -1 })
// an app's requests in both environments (the operators' request log)
requestLogSchema.index({ appDid: 1, createdAt: -1 })
requestLogSchema.index({ requestId: 1 }, { unique: true })
// the hourly prune of entries past the retention
requestLogSchema.index({ createdAt: 1 })

/** Approval request states (see docs/decisions.md, "Recipient approvals"). */
export const APPROVAL_STATUSES = ['pending', 'approved', 'declined', 'revoked', 'blocked'] as const
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number]
/** The payment types an app may ask a creator to approve. */
export const APPROVAL_PAYMENT_TYPES = ['shop', 'subscription', 'ticket', 'tip'] as const
/** Default visibility of the payment attestation record. */
export const ATTESTATION_VISIBILITIES = ['public', 'private'] as const

/**
 * One approval request per app DID, recipient DID and environment (unique index): the terms the app asks the
 * creator to accept and the creator's decision. `revision` counts the requests the creator is asked to decide
 * on (new terms, or asking again after a decline or revoke) and the end of an approval (revoke, or block of an
 * approved request): unchanged while approved, so the id and the revision name one grant; `approvedTermsHash` is the terms hash the creator
 * accepted, so an approval never covers other terms; `revokedRevision` / `revokedAt` record the last approval
 * that ended by the creator's revoke or block (its event is written from them).
 */
const recipientApprovalSchema = new Schema(
  {
    /** `apr_` + 24 base62 characters */
    id: { type: String, required: true },
    appDid: { type: String, required: true },
    recipientDid: { type: String, required: true },
    environment: { type: String, required: true, enum: ENVIRONMENTS },
    status: { type: String, required: true, enum: APPROVAL_STATUSES },
    paymentTypes: { type: [String], required: true },
    feeShareBps: { type: Number, required: true },
    publicRecords: {
      enabled: { type: Boolean, required: true, default: false },
      defaults: {
        attestation: { type: String, required: true, enum: ATTESTATION_VISIBILITIES, default: 'public' },
      },
    },
    requestReason: { type: String, default: null },
    setupReturnUrl: { type: String, default: null },
    termsHash: { type: String, required: true },
    revision: { type: Number, required: true },
    approvedTermsHash: { type: String, default: null },
    approvedAt: { type: Date, default: null },
    revokedRevision: { type: Number, default: null },
    revokedAt: { type: Date, default: null },
    /** how that approval ended (`revoked` or `blocked`): its event says so, also when written after later moves */
    revokedStatus: { type: String, default: null },
    /**
     * set by the move that approves (the revision approved) or ends an approval (the revision ended), in the same
     * write, and removed once its event is written (recipient-approvals/events.ts): a read finds a move whose event
     * write was lost (recovery.ts)
     */
    grantedDue: { type: Number },
    revokedDue: { type: Number },
    /** true while either is: the sweep finds them by this equality, which FerretDB hands to PostgreSQL (not ranges) */
    eventsDue: { type: Boolean },
  },
  // `id` is a stored field here, not mongoose's virtual alias of _id
  { timestamps: true, collection: 'recipient_approvals', id: false },
)
recipientApprovalSchema.index({ appDid: 1, recipientDid: 1, environment: 1 }, { unique: true })
recipientApprovalSchema.index({ id: 1 }, { unique: true })
recipientApprovalSchema.index({ recipientDid: 1, environment: 1, createdAt: -1 })
// the apps sweep's requests still owing a move's event (recovery.ts)
recipientApprovalSchema.index({ eventsDue: 1 })

export type AppDoc = InferSchemaType<typeof appSchema>
export type AppEnvironmentDoc = InferSchemaType<typeof appEnvironmentSchema>
export type ApiKeyDoc = InferSchemaType<typeof apiKeySchema>
export type RequestLogDoc = InferSchemaType<typeof requestLogSchema>
export type RecipientApprovalDoc = InferSchemaType<typeof recipientApprovalSchema>

export interface AppsModels {
  App: Model<AppDoc>
  AppEnvironment: Model<AppEnvironmentDoc>
  ApiKey: Model<ApiKeyDoc>
  RequestLog: Model<RequestLogDoc>
  RecipientApproval: Model<RecipientApprovalDoc>
  /** one change of an approval request at a time: the app's request or the creator's decision (recipient-approvals/turns.ts) */
  ApprovalTurn: TurnModel
  /** one write of an app environment at a time (domain/app-environment.ts, inAppEnvironmentTurn) */
  AppEnvironmentTurn: TurnModel
  /** domain events of the apps domain (app.authorization.granted / revoked), relayed by the events domain */
  Outbox: OutboxModel
}

export async function createAppsModels(conn: Connection): Promise<AppsModels> {
  const models: AppsModels = {
    App: conn.model<AppDoc>('App', appSchema),
    AppEnvironment: conn.model<AppEnvironmentDoc>('AppEnvironment', appEnvironmentSchema),
    ApiKey: conn.model<ApiKeyDoc>('ApiKey', apiKeySchema),
    RequestLog: conn.model<RequestLogDoc>('RequestLog', requestLogSchema),
    RecipientApproval: conn.model<RecipientApprovalDoc>('RecipientApproval', recipientApprovalSchema),
    ApprovalTurn: await createTurnModel(conn, 'ApprovalTurn', 'approval_turns'),
    AppEnvironmentTurn: await createTurnModel(conn, 'AppEnvironmentTurn', 'app_environment_turns'),
    Outbox: await createOutboxModel(conn, 'apps'),
  }
  // (createOutboxModel initialized the outbox already)
  await Promise.all([models.App.init(), models.AppEnvironment.init(), models.ApiKey.init(), models.RequestLog.init(), models.RecipientApproval.init()])
  return models
}

/** Re-exported for this domain's code: the one check lives in the subgraph kit. */
export { isDuplicateKeyError } from '@svc/subgraph-server'
