/**
 * Recipient approvals: an app asks a creator (the recipient) to approve its terms (payment types, fee share,
 * public records) in one environment; the creator decides in the dashboard. One request per app DID, recipient
 * DID and environment (unique index), so money.svc.app.requestRecipientApproval is idempotent and safe under
 * concurrent duplicates.
 *
 * States: pending → approved (accept) | declined (decline); approved → revoked (revoke); any → blocked (block);
 * blocked → declined (unblock); declined → approved (accept). The app's repeat request with other terms puts the
 * request back to pending (an approval never covers other terms); after a decline or revoke it asks again
 * (pending). A blocked request refuses the app (RecipientAppApprovalBlocked).
 *
 * FerretDB has no transactions and its filtered updates are not atomic, so:
 *  - creation rests on the unique index (upsert; the loser of a race meets the index and continues as an update);
 *  - every move is a conditional update on (id, revision, status): on MongoDB a concurrent move makes it miss and
 *    the loop re-reads; on FerretDB the last write wins, and each write is self-consistent with what it read;
 *  - "approved" counts only while the accepted terms hash equals the current terms hash (effectiveStatus), so
 *    even an interleaving of an accept with a terms change can never leave an approval covering other terms;
 *  - events are keyed by the fact (`app.authorization.granted:<id>:<revision>`), written after the state change
 *    and written again by a repeat of the same move (the recovery step), so they are never lost nor duplicated.
 */
import { createHash, randomBytes } from 'node:crypto'
import { ContractError } from '@svc/errors'
import { writeOutboxEvent } from '@svc/outbox'
import {
  APPROVAL_PAYMENT_TYPES,
  ATTESTATION_VISIBILITIES,
  isDuplicateKeyError,
  type ApprovalStatus,
  type AppsModels,
  type RecipientApprovalDoc,
} from '../models'
import { findAppEnvironment } from './app-config'
import { isDid, isWithinBounds, parseEnvironment, type Environment } from '@svc/vocabulary'

export const REQUEST_REASON_MAX_CHARACTERS = 500
export const SETUP_RETURN_URL_MAX_LENGTH = 2048
/** dashboardApprovals returns at most this many requests, newest first */
export const DASHBOARD_APPROVALS_LIMIT = 200
const MAX_ATTEMPTS = 30

export type PaymentType = (typeof APPROVAL_PAYMENT_TYPES)[number]
export type AttestationVisibility = (typeof ATTESTATION_VISIBILITIES)[number]

export interface RecipientApprovalInput {
  environment: string
  recipientDid: string
  paymentTypes: string[]
  feeShareBps?: number | null
  publicRecords?: { enabled?: boolean | null; defaults?: { attestation?: string | null } | null } | null
  requestReason?: string | null
  setupReturnUrl?: string | null
}

/** What the creator approves. requestReason and setupReturnUrl are not terms. */
export interface ApprovalTerms {
  paymentTypes: PaymentType[]
  feeShareBps: number
  publicRecords: { enabled: boolean; attestation: AttestationVisibility }
}

export interface RecipientApprovalView {
  id: string
  appDid: string
  recipientDid: string
  environment: Environment
  status: ApprovalStatus
  paymentTypes: string[]
  feeShareBps: number
  publicRecords: { enabled: boolean; defaults: { attestation: string } }
  requestReason: string | null
  setupReturnUrl: string | null
  termsHash: string
  revision: number
  approvedAt: string | null
  createdAt: string
  updatedAt: string
}

type StoredApproval = RecipientApprovalDoc & { createdAt?: Date; updatedAt?: Date }

/** The identity of the signed-in creator (dashboard principal). */
export interface DashboardActor {
  actorDid: string
  environment: Environment
}

function invalid(message: string): never {
  throw new ContractError('InvalidRequest', message)
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** `apr_` + 24 uniformly random base62 characters (about 143 bits). */
export function newApprovalId(): string {
  let out = ''
  while (out.length < 24) {
    for (const byte of randomBytes(32)) {
      if (byte < 248 && out.length < 24) out += BASE62[byte % 62] // 248 = 4 × 62: no modulo bias
    }
  }
  return `apr_${out}`
}

/** JSON with object keys sorted at every level and no whitespace. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
  }
  return JSON.stringify(value)
}

/** sha256 hex of the canonical JSON of the terms (payment types sorted). */
export function termsHashOf(terms: ApprovalTerms): string {
  const canonical = canonicalJson({
    paymentTypes: [...terms.paymentTypes].sort(),
    feeShareBps: terms.feeShareBps,
    publicRecords: { enabled: terms.publicRecords.enabled, attestation: terms.publicRecords.attestation },
  })
  return createHash('sha256').update(canonical).digest('hex')
}

/**
 * The status a request really has: a stored `approved` counts only while the accepted terms are the current
 * terms (it always is when every write is atomic; this holds the rule without relying on that).
 */
export function effectiveStatus(doc: Pick<StoredApproval, 'status' | 'termsHash' | 'approvedTermsHash'>): ApprovalStatus {
  const status = doc.status as ApprovalStatus
  if (status === 'approved' && doc.approvedTermsHash !== doc.termsHash) return 'pending'
  return status
}

export function toApprovalView(doc: StoredApproval): RecipientApprovalView {
  const status = effectiveStatus(doc)
  return {
    id: doc.id,
    appDid: doc.appDid,
    recipientDid: doc.recipientDid,
    environment: doc.environment as Environment,
    status,
    paymentTypes: [...(doc.paymentTypes ?? [])],
    feeShareBps: doc.feeShareBps,
    publicRecords: {
      enabled: Boolean(doc.publicRecords?.enabled),
      defaults: { attestation: doc.publicRecords?.defaults?.attestation ?? 'public' },
    },
    requestReason: doc.requestReason ?? null,
    setupReturnUrl: doc.setupReturnUrl ?? null,
    termsHash: doc.termsHash,
    revision: doc.revision,
    approvedAt: status === 'approved' && doc.approvedAt ? doc.approvedAt.toISOString() : null,
    createdAt: (doc.createdAt ?? new Date(0)).toISOString(),
    updatedAt: (doc.updatedAt ?? doc.createdAt ?? new Date(0)).toISOString(),
  }
}

/** The creator's pages of a request: `${dashboardUrl}/approvals/<id>` and `${dashboardUrl}/onboarding/<id>`. */
export function approvalUrls(dashboardUrl: string, id: string): { dashboardUrl: string; onboardingUrl: string } {
  const base = dashboardUrl.replace(/\/+$/, '')
  return { dashboardUrl: `${base}/approvals/${id}`, onboardingUrl: `${base}/onboarding/${id}` }
}

// ---------------------------------------------------------------------------------------------------------------
// Validation

function parsePaymentTypes(value: unknown): PaymentType[] {
  if (!Array.isArray(value) || value.length === 0) invalid(`paymentTypes must list at least one of ${APPROVAL_PAYMENT_TYPES.join(', ')}`)
  for (const t of value) {
    if (!(APPROVAL_PAYMENT_TYPES as readonly unknown[]).includes(t)) {
      invalid(`paymentTypes: ${JSON.stringify(t)} is not a payment type (${APPROVAL_PAYMENT_TYPES.join(', ')})`)
    }
  }
  return [...new Set(value as PaymentType[])].sort()
}

function parseFeeShare(value: unknown): number | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 10000) {
    invalid('feeShareBps must be an integer from 0 to 10000')
  }
  return value
}

function parsePublicRecords(value: RecipientApprovalInput['publicRecords']): ApprovalTerms['publicRecords'] {
  if (value !== undefined && value !== null && (typeof value !== 'object' || Array.isArray(value))) invalid('publicRecords must be an object')
  const enabled = value?.enabled ?? false
  if (typeof enabled !== 'boolean') invalid('publicRecords.enabled must be a boolean')
  const defaults = value?.defaults
  if (defaults !== undefined && defaults !== null && (typeof defaults !== 'object' || Array.isArray(defaults))) {
    invalid('publicRecords.defaults must be an object')
  }
  const attestation = defaults?.attestation ?? 'public'
  if (!(ATTESTATION_VISIBILITIES as readonly unknown[]).includes(attestation)) {
    invalid(`publicRecords.defaults.attestation must be ${ATTESTATION_VISIBILITIES.join(' or ')}`)
  }
  return { enabled, attestation: attestation as AttestationVisibility }
}

function parseRequestReason(value: unknown): string | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'string') invalid('requestReason must be a string')
  if (!isWithinBounds(value, { maxGraphemes: REQUEST_REASON_MAX_CHARACTERS, maxBytes: REQUEST_REASON_MAX_CHARACTERS * 10 })) {
    invalid(`requestReason must be at most ${REQUEST_REASON_MAX_CHARACTERS} characters`)
  }
  return value.trim() === '' ? null : value
}

/** An absolute http(s) URL on the registered app origin (AppUrlNotAllowed otherwise); returned normalized. */
function parseSetupReturnUrl(value: unknown, appOrigin: string): string | null {
  if (value === undefined || value === null) return null
  const refuse = (why: string): never => {
    throw new ContractError('AppUrlNotAllowed', `setupReturnUrl ${why}; it must be on the registered app origin ${appOrigin}`)
  }
  if (typeof value !== 'string') return refuse('is not a URL')
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return refuse('is not an absolute URL')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') refuse('is not an http(s) URL')
  if (url.username || url.password) refuse('must not carry credentials')
  let registered: string
  try {
    registered = new URL(appOrigin).origin
  } catch {
    return refuse('cannot be checked')
  }
  if (url.origin !== registered) refuse(`is on ${url.origin}`)
  return url.toString()
}

// ---------------------------------------------------------------------------------------------------------------
// Events

function publicRecordsOf(doc: StoredApproval) {
  return { enabled: Boolean(doc.publicRecords?.enabled), defaults: { attestation: doc.publicRecords?.defaults?.attestation ?? 'public' } }
}

/**
 * Concurrent identical moves (two accepts) may each have stored their own timestamp, while only one event was
 * written: every racer reads the event back and stores its timestamp, so the request and the event agree.
 */
async function settleTimestamp(models: AppsModels, doc: StoredApproval, eventId: string, field: 'approvedAt' | 'revokedAt'): Promise<StoredApproval> {
  const event = await models.Outbox.findById(eventId).lean()
  const stamped = event?.data?.[field]
  if (typeof stamped !== 'string' || stamped === doc[field]?.toISOString()) return doc
  const at = new Date(stamped)
  const fixed = await models.RecipientApproval.findOneAndUpdate(
    { id: doc.id, revision: doc.revision, status: doc.status },
    { $set: { [field]: at } },
    { returnDocument: 'after', lean: true, timestamps: false },
  )
  return fixed ?? { ...doc, [field]: at }
}

/** app.authorization.granted for the approval of one revision (written once, also by concurrent accepts). */
async function writeGranted(models: AppsModels, doc: StoredApproval): Promise<StoredApproval> {
  const approvedAt = doc.approvedAt ?? new Date()
  const eventId = await writeOutboxEvent(models.Outbox, {
    type: 'app.authorization.granted',
    key: `app.authorization.granted:${doc.id}:${doc.revision}`,
    appDid: doc.appDid,
    environment: doc.environment as Environment,
    occurredAt: approvedAt,
    data: {
      approvalId: doc.id,
      recipientDid: doc.recipientDid,
      paymentTypes: [...doc.paymentTypes],
      feeShareBps: doc.feeShareBps,
      publicRecords: publicRecordsOf(doc),
      approvedAt: approvedAt.toISOString(),
    },
  })
  return settleTimestamp(models, doc, eventId, 'approvedAt')
}

/** app.authorization.revoked for the approval of revision `revokedRevision`, ended by the creator's revoke or block. */
async function writeRevoked(models: AppsModels, doc: StoredApproval): Promise<StoredApproval> {
  if (doc.revokedRevision === null || doc.revokedRevision === undefined) return doc
  const revokedAt = doc.revokedAt ?? new Date()
  const eventId = await writeOutboxEvent(models.Outbox, {
    type: 'app.authorization.revoked',
    key: `app.authorization.revoked:${doc.id}:${doc.revokedRevision}`,
    appDid: doc.appDid,
    environment: doc.environment as Environment,
    occurredAt: revokedAt,
    data: {
      approvalId: doc.id,
      recipientDid: doc.recipientDid,
      status: doc.status,
      revokedAt: revokedAt.toISOString(),
    },
  })
  return settleTimestamp(models, doc, eventId, 'revokedAt')
}

// ---------------------------------------------------------------------------------------------------------------
// The app's request

/**
 * money.svc.app.requestRecipientApproval for an app (the caller) in input.environment. The recipient's existence
 * is checked by the caller (the XRPC adapter asks the actors domain first). Idempotent by app DID, recipient DID
 * and environment; refusals change nothing.
 */
export async function requestRecipientApproval(models: AppsModels, appDid: string, input: RecipientApprovalInput): Promise<RecipientApprovalView> {
  if (typeof input !== 'object' || input === null) invalid('the approval request must be an object')
  const environment = parseEnvironment(input.environment)
  const recipientDid = input.recipientDid
  if (typeof recipientDid !== 'string' || !isDid(recipientDid)) invalid('recipientDid must be a DID')
  if (recipientDid === appDid) invalid('recipientDid is the app itself: an app selling for itself needs no approval')
  const paymentTypes = parsePaymentTypes(input.paymentTypes)
  const requestedFeeShare = parseFeeShare(input.feeShareBps)
  const publicRecords = parsePublicRecords(input.publicRecords)
  const requestReason = parseRequestReason(input.requestReason)
  if (typeof input.setupReturnUrl === 'string' && input.setupReturnUrl.length > SETUP_RETURN_URL_MAX_LENGTH) {
    invalid(`setupReturnUrl must be at most ${SETUP_RETURN_URL_MAX_LENGTH} characters`)
  }

  const config = await findAppEnvironment(models, appDid, environment)
  const feeShareBps = requestedFeeShare ?? config.feeShareBps
  if (feeShareBps > config.feeShareBps) {
    invalid(`feeShareBps ${feeShareBps} is above the fee share registered for this app in ${environment} (${config.feeShareBps})`)
  }
  const setupReturnUrl = parseSetupReturnUrl(input.setupReturnUrl, config.appUrl)

  const terms: ApprovalTerms = { paymentTypes, feeShareBps, publicRecords }
  const termsHash = termsHashOf(terms)
  const termFields = {
    paymentTypes,
    feeShareBps,
    publicRecords: { enabled: publicRecords.enabled, defaults: { attestation: publicRecords.attestation } },
    termsHash,
  }
  const key = { appDid, recipientDid, environment }

  // Creation: the unique index decides which of concurrent first requests inserts; the others continue below.
  // (No automatic timestamps here: they would $set updatedAt on an existing request, which this must not touch.)
  const now = new Date()
  try {
    const res = await models.RecipientApproval.updateOne(
      key,
      {
        $setOnInsert: {
          createdAt: now,
          updatedAt: now,
          ...key,
          ...termFields,
          id: newApprovalId(),
          status: 'pending',
          revision: 1,
          requestReason,
          setupReturnUrl,
          approvedTermsHash: null,
          approvedAt: null,
          revokedRevision: null,
          revokedAt: null,
        },
      },
      { upsert: true, setDefaultsOnInsert: false, timestamps: false },
    )
    if (res.upsertedCount === 1) {
      const created = await models.RecipientApproval.findOne(key).lean()
      if (created) return toApprovalView(created)
    }
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err
  }

  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const cur = await models.RecipientApproval.findOne(key).lean()
    if (!cur) throw new Error('approval request vanished after creation')
    const status = effectiveStatus(cur)
    if (status === 'blocked') {
      throw new ContractError('RecipientAppApprovalBlocked', 'the creator blocked approval requests from this app')
    }
    const set: Record<string, unknown> = {}
    if (cur.termsHash !== termsHash) {
      // New terms: the creator must approve again; an earlier approval never covers them.
      Object.assign(set, termFields, { status: 'pending', revision: cur.revision + 1, approvedTermsHash: null, approvedAt: null })
    } else if (status === 'declined' || status === 'revoked') {
      // The app asks again.
      Object.assign(set, { status: 'pending', revision: cur.revision + 1, approvedTermsHash: null, approvedAt: null })
    }
    if ((cur.requestReason ?? null) !== requestReason) set.requestReason = requestReason
    if ((cur.setupReturnUrl ?? null) !== setupReturnUrl) set.setupReturnUrl = setupReturnUrl
    if (Object.keys(set).length === 0) return toApprovalView(cur)
    const doc = await models.RecipientApproval.findOneAndUpdate(
      { id: cur.id, revision: cur.revision, status: cur.status },
      { $set: set },
      { returnDocument: 'after', lean: true },
    )
    if (doc) return toApprovalView(doc)
  }
  throw new Error('approval request: too many concurrent changes')
}

/** The app's request to one recipient in one environment, or null (read-only; never creates). */
export async function findAppApproval(models: AppsModels, appDid: string, environment: Environment, recipientDid: string): Promise<RecipientApprovalView | null> {
  if (typeof recipientDid !== 'string') return null
  const doc = await models.RecipientApproval.findOne({ appDid, recipientDid, environment }).lean()
  return doc ? toApprovalView(doc) : null
}

// ---------------------------------------------------------------------------------------------------------------
// The creator's decisions (dashboard)

/** The requests addressed to the signed-in creator in its environment, newest first. */
export async function listDashboardApprovals(models: AppsModels, who: DashboardActor): Promise<RecipientApprovalView[]> {
  const docs = await models.RecipientApproval.find({ recipientDid: who.actorDid, environment: who.environment })
    .sort({ createdAt: -1, id: 1 })
    .limit(DASHBOARD_APPROVALS_LIMIT)
    .lean()
  return docs.map(toApprovalView)
}

async function findAddressed(models: AppsModels, who: DashboardActor, id: string): Promise<StoredApproval> {
  const doc =
    typeof id === 'string' ? await models.RecipientApproval.findOne({ id, recipientDid: who.actorDid, environment: who.environment }).lean() : null
  // Someone else's request is as unknown as a request that does not exist.
  if (!doc) throw new ContractError('NotFound', `approval request ${String(id)} not found`)
  return doc
}

/** NotFound unless the request is addressed to the signed-in creator in its environment. */
export async function getDashboardApproval(models: AppsModels, who: DashboardActor, id: string): Promise<RecipientApprovalView> {
  return toApprovalView(await findAddressed(models, who, id))
}

function notAllowed(message: string): never {
  throw new ContractError('NotAllowed', message)
}

type Decision = (cur: StoredApproval, status: ApprovalStatus) => { set: Record<string, unknown> } | { unchanged: true }
/** `from`: the status the decision moved the request from; null when it was already taken (nothing written) */
type AfterDecision = (doc: StoredApproval, from: ApprovalStatus | null) => Promise<StoredApproval>

/**
 * One creator decision: read, decide, conditional update on (id, revision, status, terms), retry on a concurrent
 * change; then the event step, also when the decision was already taken (the recovery of a lost event write).
 */
async function decide(
  models: AppsModels,
  who: DashboardActor,
  id: string,
  decision: Decision,
  after: AfterDecision = async (doc) => doc,
): Promise<RecipientApprovalView> {
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const cur = await findAddressed(models, who, id)
    const from = effectiveStatus(cur)
    const outcome = decision(cur, from)
    if ('unchanged' in outcome) return toApprovalView(await after(cur, null))
    const doc = await models.RecipientApproval.findOneAndUpdate(
      { id: cur.id, revision: cur.revision, status: cur.status, termsHash: cur.termsHash },
      { $set: outcome.set },
      { returnDocument: 'after', lean: true },
    )
    if (doc) return toApprovalView(await after(doc, from))
  }
  throw new Error('approval decision: too many concurrent changes')
}

/** The revoked event is due when the request's last move ended an approval (revoke, or block of an approved request). */
function endedAnApproval(doc: StoredApproval): boolean {
  return doc.revokedRevision !== null && doc.revokedRevision !== undefined && doc.revokedRevision === doc.revision - 1
}

/**
 * The creator accepts the terms shown to it (termsHash). From pending or declined → approved, and the
 * app.authorization.granted event. ApprovalTermsChanged when the terms changed meanwhile; already approved with
 * these terms → unchanged; blocked or revoked → NotAllowed.
 */
export function acceptApproval(models: AppsModels, who: DashboardActor, id: string, termsHash: string): Promise<RecipientApprovalView> {
  return decide(
    models,
    who,
    id,
    (cur, status) => {
      if (status === 'blocked') notAllowed('this app is blocked: unblock it before accepting its terms')
      if (status === 'revoked') notAllowed('this approval was revoked: the app must request it again before it can be accepted')
      if (termsHash !== cur.termsHash) {
        throw new ContractError('ApprovalTermsChanged', 'the app changed its terms since they were shown: review the current terms and accept again')
      }
      if (status === 'approved') return { unchanged: true }
      return { set: { status: 'approved', approvedTermsHash: cur.termsHash, approvedAt: new Date() } }
    },
    async (doc) => (effectiveStatus(doc) === 'approved' ? writeGranted(models, doc) : doc),
  )
}

/** pending → declined (declined again → unchanged). */
export function declineApproval(models: AppsModels, who: DashboardActor, id: string): Promise<RecipientApprovalView> {
  return decide(models, who, id, (_cur, status) => {
    if (status === 'declined') return { unchanged: true }
    if (status === 'approved') notAllowed('an approved request is not declined: revoke the approval instead')
    if (status !== 'pending') notAllowed(`a ${status} request cannot be declined`)
    return { set: { status: 'declined' } }
  })
}

function endApproval(cur: StoredApproval, status: 'revoked' | 'blocked'): Record<string, unknown> {
  return {
    status,
    revision: cur.revision + 1,
    approvedTermsHash: null,
    approvedAt: null,
    revokedRevision: cur.revision,
    revokedAt: new Date(),
  }
}

/** approved → revoked, and the app.authorization.revoked event (revoked again → unchanged). */
export function revokeApproval(models: AppsModels, who: DashboardActor, id: string): Promise<RecipientApprovalView> {
  return decide(
    models,
    who,
    id,
    (cur, status) => {
      if (status === 'revoked') return { unchanged: true }
      if (status !== 'approved') notAllowed(`only an approved request can be revoked; this one is ${status}`)
      return { set: endApproval(cur, 'revoked') }
    },
    async (doc) => (doc.status === 'revoked' && endedAnApproval(doc) ? writeRevoked(models, doc) : doc),
  )
}

/** any → blocked; an approval it ends gets the app.authorization.revoked event (blocked again → unchanged). */
export function blockApproval(models: AppsModels, who: DashboardActor, id: string): Promise<RecipientApprovalView> {
  return decide(
    models,
    who,
    id,
    (cur, status) => {
      if (status === 'blocked') return { unchanged: true }
      if (status === 'approved') return { set: endApproval(cur, 'blocked') }
      return { set: { status: 'blocked' } }
    },
    async (doc, from) => {
      if (doc.status !== 'blocked') return doc
      // a fresh block writes the event only if it ended an approval; a repeated block repeats a lost write
      const due = from === null ? endedAnApproval(doc) : from === 'approved'
      return due ? writeRevoked(models, doc) : doc
    },
  )
}

/** blocked → declined: the app may ask again (its next request makes the request pending). */
export function unblockApproval(models: AppsModels, who: DashboardActor, id: string): Promise<RecipientApprovalView> {
  return decide(models, who, id, (_cur, status) => {
    if (status !== 'blocked') notAllowed(`only a blocked request can be unblocked; this one is ${status}`)
    return { set: { status: 'declined' } }
  })
}
