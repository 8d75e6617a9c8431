/**
 * Webhook signing secrets (docs/events.md, "Signing secrets"): `whsec_` + base64 of 32 random bytes, one set per app
 * and environment, stored encrypted (AES-256-GCM, key = SHA-256 of WEBHOOK_SECRET_KEY; while that key is rotated, a
 * secret stored under WEBHOOK_SECRET_KEY_PREVIOUS is read with it until reencryptSigningSecrets has moved it), shown to the app until its
 * configuration records it as handed over (apps domain). Generation 1 is created with the configuration; a rotation
 * adds the next generation and lets the earlier ones keep signing until the overlap ends. Which generation exists is
 * decided by a unique index, so concurrent creations make one.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import { ContractError } from '@svc/errors'
import { inTurn } from '@svc/subgraph-server'
import { isDuplicateKeyError, type EventsModels, type SigningSecretDoc } from '../models'
import type { Environment } from '@svc/vocabulary'

export const DEFAULT_OVERLAP_SECONDS = 24 * 3600
export const MAX_OVERLAP_SECONDS = 7 * 24 * 3600

export interface SigningSecretIssued {
  /** the secret itself: from the call that created it, and from every call that asks to reveal it */
  secret: string | null
  created: boolean
  generation: number
  hint: string
  /** when the previous secrets stop signing (rotation) */
  previousExpiresAt: Date | null
}

/**
 * WEBHOOK_SECRET_KEY, and during a rotation of that key the one before (WEBHOOK_SECRET_KEY_PREVIOUS): new secrets are
 * encrypted under the current key; a stored secret is read under either.
 */
export type WebhookSecretKeys = string | { current: string; previous?: string | null }

const currentKey = (keys: WebhookSecretKeys): string => (typeof keys === 'string' ? keys : keys.current)
const readingKeys = (keys: WebhookSecretKeys): string[] => (typeof keys === 'string' ? [keys] : [keys.current, ...(keys.previous ? [keys.previous] : [])])

type StoredSecret = { iv: string; ciphertext: string; tag: string }

/** Which of the keys the stored secret was encrypted under (`current` or `previous`), and the secret; null: neither. */
function readStored(keys: WebhookSecretKeys, stored: StoredSecret): { secret: string; under: 'current' | 'previous' } | null {
  for (const [i, key] of readingKeys(keys).entries()) {
    try {
      return { secret: decryptSecret(key, stored), under: i === 0 ? 'current' : 'previous' }
    } catch {
      // AES-GCM's tag does not match: another key
    }
  }
  return null
}

/**
 * The stored secret, read under the current key or the one before. Neither reads it (WEBHOOK_SECRET_KEY replaced
 * without its _PREVIOUS): ServiceUnavailable, for an operator to mend (docs/events.md, "Signing secrets"), never a 500.
 */
export function readSigningSecret(keys: WebhookSecretKeys, stored: StoredSecret): string {
  const read = readStored(keys, stored)
  if (read) return read.secret
  throw new ContractError(
    'ServiceUnavailable',
    'the signing secrets cannot be read with WEBHOOK_SECRET_KEY (nor WEBHOOK_SECRET_KEY_PREVIOUS): the operators must restore the key or replace the secrets',
  )
}

function cipherKey(secretKey: string): Buffer {
  return createHash('sha256').update(secretKey).digest()
}

export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

export function encryptSecret(secretKey: string, secret: string): { iv: string; ciphertext: string; tag: string } {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', cipherKey(secretKey), iv)
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
  return { iv: iv.toString('base64'), ciphertext: ciphertext.toString('base64'), tag: cipher.getAuthTag().toString('base64') }
}

export function decryptSecret(secretKey: string, stored: { iv: string; ciphertext: string; tag: string }): string {
  const decipher = createDecipheriv('aes-256-gcm', cipherKey(secretKey), Buffer.from(stored.iv, 'base64'))
  decipher.setAuthTag(Buffer.from(stored.tag, 'base64'))
  return Buffer.concat([decipher.update(Buffer.from(stored.ciphertext, 'base64')), decipher.final()]).toString('utf8')
}

/** Throws when neither key is the one the stored secret was encrypted with. */
function assertDecrypts(keys: WebhookSecretKeys, stored: StoredSecret): void {
  if (readStored(keys, stored) === null) {
    throw new ContractError(
      'InvalidRequest',
      'WEBHOOK_SECRET_KEY does not decrypt the stored signing secrets: run with the workers\' key (or, if that key itself was replaced, --replace-unreadable --overlap-hours 0); nothing was changed',
    )
  }
}

async function insertGeneration(
  models: EventsModels,
  keys: WebhookSecretKeys,
  appDid: string,
  environment: Environment,
  generation: number,
): Promise<string | null> {
  const secret = generateSigningSecret()
  try {
    await models.SigningSecret.create({ appDid, environment, generation, hint: secret.slice(-4), expiresAt: null, ...encryptSecret(currentKey(keys), secret) })
    return secret
  } catch (err) {
    if (isDuplicateKeyError(err)) return null
    throw err
  }
}

/**
 * The app environment's first secret unless it has one. The secret comes back from the call that created it, and,
 * with `reveal`, from every call: the apps domain asks until it has recorded the secret as handed to the app, so a
 * call whose answer was lost after the secret was made (a timeout, a process stopped) is answered by the next one.
 */
export async function ensureSigningSecret(
  models: EventsModels,
  keys: WebhookSecretKeys,
  appDid: string,
  environment: Environment,
  opts: { reveal?: boolean } = {},
): Promise<SigningSecretIssued> {
  const existing = await models.SigningSecret.findOne({ appDid, environment }).sort({ generation: -1 }).lean()
  if (existing) return existingSecret(keys, existing, opts)
  const secret = await insertGeneration(models, keys, appDid, environment, 1)
  if (secret) return { secret, created: true, generation: 1, hint: secret.slice(-4), previousExpiresAt: null }
  const winner = await models.SigningSecret.findOne({ appDid, environment, generation: 1 }).lean()
  return winner ? existingSecret(keys, winner, opts) : { secret: null, created: false, generation: 1, hint: '', previousExpiresAt: null }
}

function existingSecret(keys: WebhookSecretKeys, doc: SigningSecretDoc, opts: { reveal?: boolean }): SigningSecretIssued {
  const secret = opts.reveal ? readSigningSecret(keys, doc) : null
  return { secret, created: false, generation: doc.generation, hint: doc.hint, previousExpiresAt: null }
}

/**
 * A new current secret; every earlier one keeps signing until `overlapSeconds` from now (0 = stops at once).
 * Concurrent rotations each get their own generation (the unique index decides the numbers), one at a time in the
 * app environment's turn: the earlier secrets' end is a filtered update, which FerretDB applies by reading and writing
 * the documents back, so a rotation with a long overlap could otherwise write back an end a concurrent `0` had moved
 * to now (a leaked secret left signing for days).
 */
export async function rotateSigningSecret(
  models: EventsModels,
  keys: WebhookSecretKeys,
  appDid: string,
  environment: Environment,
  overlapSeconds: number = DEFAULT_OVERLAP_SECONDS,
  now: Date = new Date(),
  opts: RotateOptions = {},
): Promise<SigningSecretIssued> {
  if (!Number.isInteger(overlapSeconds) || overlapSeconds < 0 || overlapSeconds > MAX_OVERLAP_SECONDS) {
    throw new ContractError('InvalidRequest', `overlapSeconds must be an integer from 0 to ${MAX_OVERLAP_SECONDS}`)
  }
  // unreadable secrets cannot sign during an overlap: replacing them stops them at once
  if (opts.replaceUnreadable && overlapSeconds !== 0) throw new ContractError('InvalidRequest', 'replacing unreadable secrets needs an overlap of 0')
  return inTurn(models.SigningSecretTurn, `${environment} ${appDid}`, () => rotateInTurn(models, keys, appDid, environment, overlapSeconds, now, opts), {
    busyMessage: 'another rotation of this app environment\'s signing secret is in progress; retry',
  })
}

export interface RotateOptions {
  /**
   * WEBHOOK_SECRET_KEY itself was replaced (lost): the stored secrets cannot be read by any process any more, and the
   * rotation (overlap 0) replaces them. Without it a key that does not decrypt the stored secrets is refused.
   */
  replaceUnreadable?: boolean
}

async function rotateInTurn(
  models: EventsModels,
  keys: WebhookSecretKeys,
  appDid: string,
  environment: Environment,
  overlapSeconds: number,
  now: Date,
  opts: RotateOptions,
): Promise<SigningSecretIssued> {
  for (let tries = 0; tries < 20; tries++) {
    const latest = await models.SigningSecret.findOne({ appDid, environment }).sort({ generation: -1 }).lean()
    // a key that cannot read what is stored (an operator shell without the real WEBHOOK_SECRET_KEY) would store a
    // secret the workers cannot read either, and every delivery of the app environment would stop; with no secret
    // here yet, any app's tells
    const probe = opts.replaceUnreadable ? null : (latest ?? (await models.SigningSecret.findOne().sort({ createdAt: -1 }).lean()))
    if (probe) assertDecrypts(keys, probe)
    const generation = (latest?.generation ?? 0) + 1
    const secret = await insertGeneration(models, keys, appDid, environment, generation)
    if (!secret) continue
    const previousExpiresAt = new Date(now.getTime() + overlapSeconds * 1000)
    // Earlier generations sign until the overlap ends; one that already ends sooner keeps its earlier end.
    await models.SigningSecret.updateMany(
      { appDid, environment, generation: { $lt: generation }, $or: [{ expiresAt: null }, { expiresAt: { $gt: previousExpiresAt } }] },
      { $set: { expiresAt: previousExpiresAt } },
    ).catch((err: unknown) => {
      // the new secret is stored but not handed out, and the earlier ones (a leaked one, perhaps) still sign with no
      // end: the caller must hear that running the rotation again fixes it (its next generation ends all of these)
      throw new ContractError(
        'ServiceUnavailable',
        `the new secret (generation ${generation}) was stored, but the earlier secrets could not be given their end (${(err as Error).message}): they still sign; run the rotation again`,
      )
    })
    return { secret, created: true, generation, hint: secret.slice(-4), previousExpiresAt: latest ? previousExpiresAt : null }
  }
  throw new ContractError('ServiceUnavailable', 'too many concurrent rotations; try again')
}

/** The secrets that sign a delivery now, newest first (the current one and those still in their overlap). */
export async function activeSigningSecrets(
  models: EventsModels,
  keys: WebhookSecretKeys,
  appDid: string,
  environment: Environment,
  now: Date = new Date(),
): Promise<string[]> {
  const docs: SigningSecretDoc[] = await models.SigningSecret.find({
    appDid,
    environment,
    $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }],
  })
    .sort({ generation: -1 })
    .lean()
  return docs.map((doc) => readSigningSecret(keys, doc))
}

export interface ReencryptionReport {
  /** secrets moved from the previous key to the current one */
  reencrypted: number
  /** secrets already under the current key */
  current: number
  /** secrets neither key reads (left as they are: `rotate-secret --replace-unreadable` replaces them) */
  unreadable: number
}

/**
 * Moves every stored secret encrypted under WEBHOOK_SECRET_KEY_PREVIOUS to WEBHOOK_SECRET_KEY: the last step of that
 * key's rotation, after which the previous key can go. The secrets themselves do not change (apps notice nothing).
 * Safe to run again and beside the running service: a secret written twice is the same secret under the current key.
 */
export async function reencryptSigningSecrets(models: EventsModels, keys: { current: string; previous: string | null }): Promise<ReencryptionReport> {
  const report: ReencryptionReport = { reencrypted: 0, current: 0, unreadable: 0 }
  // every app environment's secrets: an operator's run over the whole collection (a few documents per app)
  for await (const doc of models.SigningSecret.find({}, { iv: 1, ciphertext: 1, tag: 1 }).lean().cursor()) {
    const read = readStored(keys, doc)
    if (read === null) report.unreadable++
    else if (read.under === 'current') report.current++
    else {
      await models.SigningSecret.updateOne({ _id: doc._id }, { $set: encryptSecret(keys.current, read.secret) })
      report.reencrypted++
    }
  }
  return report
}
