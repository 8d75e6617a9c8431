/** The app's request: money.svc.app.requestRecipientApproval. */
import { ContractError } from '@svc/errors'
import { hasControlCharacters, isDid, isWithinBounds } from '@svc/vocabulary'
import { isDuplicateKeyError } from '../../models'
import type { ServingApps } from '../context'
import { resolveAppAccess } from '../app-access'
import { findAppEnvironment } from '../app-environment'
import { invalid } from './errors'
import { newApprovalId } from './ids'
import { effectiveStatus, MAX_ATTEMPTS, requestAgain } from './state'
import { parseFeeShare, parsePaymentTypes, parsePublicRecords, storedTermsOf, type ApprovalTerms } from './terms'
import { inApprovalTurn } from './turns'
import { toApprovalView, type RecipientApprovalView } from './views'
import type { RecipientApprovalInput } from '../../generated/graph-types'

export const REQUEST_REASON_MAX_CHARACTERS = 500
export const SETUP_RETURN_URL_MAX_LENGTH = 2048

export type { RecipientApprovalInput }

function parseRequestReason(value: unknown): string | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'string') invalid('requestReason must be a string')
  if (!isWithinBounds(value, { maxGraphemes: REQUEST_REASON_MAX_CHARACTERS, maxBytes: REQUEST_REASON_MAX_CHARACTERS * 10 })) {
    invalid(`requestReason must be at most ${REQUEST_REASON_MAX_CHARACTERS} characters`)
  }
  // shown to the creator on the approval page: line breaks and tabs only, no bidirectional overrides (as names)
  if (hasControlCharacters(value.replace(/[\n\t]/g, ' '))) invalid('requestReason must not contain control characters or bidirectional overrides')
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
  // as stored and sent back (a Location header): non-ASCII characters are percent-encoded, up to 9 times as long
  const normalized = url.toString()
  if (normalized.length > SETUP_RETURN_URL_MAX_LENGTH) invalid(`setupReturnUrl must be at most ${SETUP_RETURN_URL_MAX_LENGTH} characters once percent-encoded`)
  return normalized
}

/**
 * money.svc.app.requestRecipientApproval for an app (the caller) in input.environment (else its only configured
 * one). The recipient must be a known actor of that environment (the actors domain's fact, read here:
 * RecipientNotFound). Idempotent by app DID, recipient DID and environment; refusals change nothing.
 */
export async function requestRecipientApproval(
  d: Pick<ServingApps, 'models' | 'facts' | 'logger'>,
  appDid: string,
  input: RecipientApprovalInput,
): Promise<RecipientApprovalView> {
  const { models } = d
  if (typeof input !== 'object' || input === null) invalid('the approval request must be an object')
  const { environment } = await resolveAppAccess(d, appDid, input.environment)
  const recipientDid = input.recipientDid
  if (typeof recipientDid !== 'string' || !isDid(recipientDid)) invalid('recipientDid must be a DID')
  if (recipientDid === appDid) invalid('recipientDid is the app itself: an app selling for itself needs no approval')
  if (!(await d.facts.actor(recipientDid, environment))) {
    throw new ContractError('RecipientNotFound', `recipient ${recipientDid} is not a known actor in ${environment}`)
  }
  const paymentTypes = parsePaymentTypes(input.paymentTypes)
  const requestedFeeShare = parseFeeShare(input.feeShareBps)
  const publicRecords = parsePublicRecords(input.publicRecords)
  const requestReason = parseRequestReason(input.requestReason)
  if (typeof input.setupReturnUrl === 'string' && input.setupReturnUrl.length > SETUP_RETURN_URL_MAX_LENGTH) {
    invalid(`setupReturnUrl must be at most ${SETUP_RETURN_URL_MAX_LENGTH} characters`)
  }

  const config = await findAppEnvironment(d, appDid, environment)
  const setupReturnUrl = parseSetupReturnUrl(input.setupReturnUrl, config.appUrl)
  /**
   * The terms asked for, given the request as it stands (null: none yet). An absent `feeShareBps` is the request's
   * own share, else the registered one: a repeat of the same body keeps the terms the creator accepted after an
   * operator lowered the app's share (the lower share applies at initiation anyway, docs/decisions.md). A share above
   * the registered one is refused, unless it is the request's own (the same body again).
   */
  const termsFor = (cur: { feeShareBps: number } | null) => {
    const feeShareBps = requestedFeeShare ?? cur?.feeShareBps ?? config.feeShareBps
    if (feeShareBps > config.feeShareBps && feeShareBps !== cur?.feeShareBps) {
      invalid(`feeShareBps ${feeShareBps} is above the fee share registered for this app in ${environment} (${config.feeShareBps})`)
    }
    const terms: ApprovalTerms = { paymentTypes, feeShareBps, publicRecords }
    return storedTermsOf(terms)
  }
  const key = { appDid, recipientDid, environment }

  // one change of the request at a time: the creator's decisions take the same turn (turns.ts)
  return inApprovalTurn(d, key, async () => {
    // Creation: the unique index decides which of concurrent first requests inserts; the others continue below.
    // (No automatic timestamps here: they would $set updatedAt on an existing request, which this must not touch.)
    if ((await models.RecipientApproval.exists(key)) === null) {
      const termFields = termsFor(null)
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
    }

    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const cur = await models.RecipientApproval.findOne(key).lean()
      if (!cur) throw new Error('approval request vanished after creation')
      const set = requestAgain(cur, effectiveStatus(cur), termsFor(cur))
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
  })
}
