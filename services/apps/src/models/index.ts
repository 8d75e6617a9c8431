/**
 * Collections owned by the apps subgraph. Every document carries its app DID and environment;
 * uniqueness that must hold under concurrency rests on unique indexes (FerretDB's filtered
 * updates are not atomic).
 */
import { Schema, type Connection, type InferSchemaType, type Model } from 'mongoose'

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
    environment: { type: String, required: true, enum: ['test', 'live'] },
    status: { type: String, required: true, default: 'active' },
    appUrl: { type: String, required: true },
    feeShareBps: { type: Number, required: true },
    webhook: {
      url: { type: String, default: null },
      paused: { type: Boolean, default: false },
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
    environment: { type: String, required: true, enum: ['test', 'live'] },
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
requestLogSchema.index({ requestId: 1 }, { unique: true })

export type AppDoc = InferSchemaType<typeof appSchema>
export type AppEnvironmentDoc = InferSchemaType<typeof appEnvironmentSchema>
export type ApiKeyDoc = InferSchemaType<typeof apiKeySchema>
export type RequestLogDoc = InferSchemaType<typeof requestLogSchema>

export interface AppsModels {
  App: Model<AppDoc>
  AppEnvironment: Model<AppEnvironmentDoc>
  ApiKey: Model<ApiKeyDoc>
  RequestLog: Model<RequestLogDoc>
}

export async function createAppsModels(conn: Connection): Promise<AppsModels> {
  const models: AppsModels = {
    App: conn.model('App', appSchema),
    AppEnvironment: conn.model('AppEnvironment', appEnvironmentSchema),
    ApiKey: conn.model('ApiKey', apiKeySchema),
    RequestLog: conn.model('RequestLog', requestLogSchema),
  }
  await Promise.all(Object.values(models).map((m: Model<unknown>) => m.init()))
  return models
}

export function isDuplicateKeyError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: number }).code === 11000
}
