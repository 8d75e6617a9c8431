/**
 * The checkout product envelope (DESIGN.md §4): `svc.checkout.v1:` + base64url(JSON), no padding.
 *
 * The app SDK builds it (`encodeProduct`, re-exported there as `buildProduct`); the payments subgraph parses it
 * strictly (`parseProduct`): a value that fails any rule below is `InvalidProduct` at network.svc.payment.initiate.
 * One module holds the rules so the builder and the parser can never disagree.
 */
import { z } from 'zod'
import { ENVIRONMENTS, hasControlCharacters, isCurrencyCode, isDid, type Environment } from '@svc/vocabulary'

/** The version prefix every product string starts with. */
export const PRODUCT_PREFIX = 'svc.checkout.v1:'

/** Longest accepted product string, prefix included (characters). */
export const MAX_PRODUCT_LENGTH = 4096

export const PAYMENT_TYPES = ['tip', 'shop', 'subscription', 'ticket'] as const
export type PaymentType = (typeof PAYMENT_TYPES)[number]

export const CADENCES = ['month', 'year'] as const
export type Cadence = (typeof CADENCES)[number]

export const MIN_AMOUNT = 1
export const MAX_AMOUNT = 100_000_000
export const MAX_URL_LENGTH = 2048
export const MAX_DESCRIPTION_LENGTH = 500

const APP_ORDER_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/
const HOLD_ID_RE = /^hold_[A-Za-z0-9_-]{1,123}$/
// eslint-disable-next-line no-control-regex
const WHITESPACE_OR_CONTROL_RE = /[\s\u0000-\u001f\u007f-\u009f]/

function isHttpUrl(value: string): boolean {
  if (WHITESPACE_OR_CONTROL_RE.test(value)) return false
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return false
  }
  return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '' && url.username === '' && url.password === ''
}

/**
 * Within MAX_URL_LENGTH as the URL goes on (percent-encoded, in a redirect's Location header): a non-ASCII character
 * is up to 9 characters there, so 2,000 of them would make an 18 kB header that proxies refuse.
 */
function encodedWithinLimit(value: string): boolean {
  try {
    return new URL(value).href.length <= MAX_URL_LENGTH
  } catch {
    return value.length <= MAX_URL_LENGTH
  }
}

/** A return or cancel URL a checkout accepts: absolute http(s), no credentials or whitespace, at most MAX_URL_LENGTH. */
export const isCheckoutUrl = (value: string): boolean => value.length <= MAX_URL_LENGTH && isHttpUrl(value) && encodedWithinLimit(value)

const httpUrl = (field: string) =>
  z
    .string()
    .max(MAX_URL_LENGTH, `${field} must be at most ${MAX_URL_LENGTH} characters`)
    .refine(isHttpUrl, `${field} must be an absolute http(s) URL without credentials or whitespace`)
    .refine(encodedWithinLimit, `${field} must be at most ${MAX_URL_LENGTH} characters once percent-encoded`)

/**
 * The fields of a product. Strict: unknown keys are refused. `cadence` is required exactly when paymentType is
 * `subscription`, `holdId` exactly when it is `ticket`.
 */
export const checkoutProductSchema = z
  .strictObject({
    recipientDid: z.string().max(2048, 'recipientDid must be at most 2048 characters').refine(isDid, 'recipientDid must be a DID'),
    paymentType: z.enum(PAYMENT_TYPES, `paymentType must be one of ${PAYMENT_TYPES.join(', ')}`),
    amount: z
      .int('amount must be an integer number of minor units')
      .min(MIN_AMOUNT, `amount must be at least ${MIN_AMOUNT}`)
      .max(MAX_AMOUNT, `amount must be at most ${MAX_AMOUNT}`),
    currency: z.string().refine(isCurrencyCode, 'currency must be a lowercase three-letter ISO 4217 code'),
    appOrderId: z.string().regex(APP_ORDER_ID_RE, 'appOrderId must be 1-128 characters of A-Z a-z 0-9 . _ : -'),
    description: z
      .string()
      .refine((s) => [...s].length >= 1 && [...s].length <= MAX_DESCRIPTION_LENGTH, `description must be 1-${MAX_DESCRIPTION_LENGTH} characters`)
      .refine((s) => s.trim() !== '', 'description must not be blank')
      .refine((s) => !hasControlCharacters(s), 'description must not contain control characters'),
    returnUrl: httpUrl('returnUrl'),
    cancelUrl: httpUrl('cancelUrl'),
    environment: z.enum(ENVIRONMENTS, `environment must be one of ${ENVIRONMENTS.join(', ')}`).optional(),
    cadence: z.enum(CADENCES, `cadence must be one of ${CADENCES.join(', ')}`).optional(),
    holdId: z.string().regex(HOLD_ID_RE, 'holdId must be hold_ followed by 1-123 characters of A-Z a-z 0-9 _ -').optional(),
  })
  .superRefine((p, ctx) => {
    if (p.paymentType === 'subscription' && p.cadence === undefined) {
      ctx.addIssue({ code: 'custom', path: ['cadence'], message: 'cadence is required when paymentType is subscription' })
    }
    if (p.paymentType !== 'subscription' && p.cadence !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['cadence'], message: 'cadence is only allowed when paymentType is subscription' })
    }
    if (p.paymentType === 'ticket' && p.holdId === undefined) {
      ctx.addIssue({ code: 'custom', path: ['holdId'], message: 'holdId is required when paymentType is ticket' })
    }
    if (p.paymentType !== 'ticket' && p.holdId !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['holdId'], message: 'holdId is only allowed when paymentType is ticket' })
    }
  })

interface ProductBase {
  /** DID of the recipient (creator or project), or of the app itself when it sells for itself. */
  recipientDid: string
  /** Integer minor units of `currency`, 1 .. 100 000 000. */
  amount: number
  /** Lowercase ISO 4217 code, e.g. `usd`. */
  currency: string
  /** The app's id of this purchase attempt (1-128 of A-Z a-z 0-9 . _ : -): initiate is idempotent by it. */
  appOrderId: string
  /** Shown to the buyer on the checkout page: 1-500 characters, no control characters. */
  description: string
  /** Where the buyer is sent after a successful payment: absolute http(s) URL. */
  returnUrl: string
  /** Where the buyer is sent when they cancel: absolute http(s) URL. */
  cancelUrl: string
  /**
   * The environment of the checkout, `test` or `live`. Optional: when absent, the app's only configured environment
   * applies (an app configured for both must name it, as the initiate body carries the product only).
   */
  environment?: Environment
}

/** A valid product's fields. */
export type CheckoutProduct =
  | (ProductBase & { paymentType: 'tip' | 'shop'; cadence?: undefined; holdId?: undefined })
  | (ProductBase & { paymentType: 'subscription'; cadence: Cadence; holdId?: undefined })
  | (ProductBase & { paymentType: 'ticket'; holdId: string; cadence?: undefined })

/** Why a product string was refused. */
export type ProductFailureCode = 'NotString' | 'TooLong' | 'MissingPrefix' | 'BadEncoding' | 'NotJson' | 'NotObject' | 'InvalidFields'

export type ParseProductResult =
  | { ok: true; product: CheckoutProduct }
  | { ok: false; code: ProductFailureCode; reason: string }

/** Thrown by `encodeProduct` for fields that break a rule (the same rules `parseProduct` applies). */
export class InvalidProductError extends Error {
  override readonly name = 'InvalidProductError'
  constructor(
    readonly code: ProductFailureCode,
    readonly reason: string,
  ) {
    super(`invalid checkout product: ${reason}`)
  }
}

function describeIssues(error: z.ZodError, input: unknown): string {
  const present = (key: PropertyKey | undefined) =>
    typeof input === 'object' && input !== null && key !== undefined && Object.prototype.hasOwnProperty.call(input, key)
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const path = issue.path.map(String).join('.')
      if (issue.code === 'unrecognized_keys') return `unknown field(s): ${issue.keys.join(', ')}`
      if (issue.code !== 'custom' && issue.path.length === 1 && !present(issue.path[0])) return `${path} is required`
      return path ? (issue.message.startsWith(path) ? issue.message : `${path}: ${issue.message}`) : issue.message
    })
    .join('; ')
}

/** Fields in one fixed key order, so the same product always encodes to the same string. */
function canonical(p: CheckoutProduct): Record<string, unknown> {
  const out: Record<string, unknown> = {
    recipientDid: p.recipientDid,
    paymentType: p.paymentType,
    amount: p.amount,
    currency: p.currency,
    appOrderId: p.appOrderId,
    description: p.description,
    returnUrl: p.returnUrl,
    cancelUrl: p.cancelUrl,
  }
  if (p.environment !== undefined) out.environment = p.environment
  if (p.cadence !== undefined) out.cadence = p.cadence
  if (p.holdId !== undefined) out.holdId = p.holdId
  return out
}

function validate(value: unknown): ParseProductResult {
  const parsed = checkoutProductSchema.safeParse(value)
  if (!parsed.success) return { ok: false, code: 'InvalidFields', reason: describeIssues(parsed.error, value) }
  return { ok: true, product: canonical(parsed.data as CheckoutProduct) as unknown as CheckoutProduct }
}

/**
 * The canonical product string of the fields, whatever its length: what tells two purchases apart (the service
 * hashes it with the environment resolved, which can make it longer than the product the app sent). Throws
 * `InvalidProductError` when a rule is broken.
 */
export function canonicalProduct(fields: CheckoutProduct): string {
  const result = validate(fields)
  if (!result.ok) throw new InvalidProductError(result.code, result.reason)
  return PRODUCT_PREFIX + Buffer.from(JSON.stringify(result.product), 'utf8').toString('base64url')
}

/**
 * Validates the fields and returns the product string. Throws `InvalidProductError` when a rule is broken or the
 * result would exceed MAX_PRODUCT_LENGTH.
 */
export function encodeProduct(fields: CheckoutProduct): string {
  const product = canonicalProduct(fields)
  if (product.length > MAX_PRODUCT_LENGTH) {
    throw new InvalidProductError('TooLong', `the product is ${product.length} characters, more than ${MAX_PRODUCT_LENGTH}`)
  }
  return product
}

const BASE64URL_RE = /^[A-Za-z0-9_-]+$/
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** Strictly parses a product string. Never throws: a refusal says which rule failed. */
export function parseProduct(product: unknown): ParseProductResult {
  const fail = (code: ProductFailureCode, reason: string): ParseProductResult => ({ ok: false, code, reason })
  if (typeof product !== 'string') return fail('NotString', 'the product must be a string')
  if (product.length > MAX_PRODUCT_LENGTH) return fail('TooLong', `the product is longer than ${MAX_PRODUCT_LENGTH} characters`)
  if (!product.startsWith(PRODUCT_PREFIX)) return fail('MissingPrefix', `the product must start with ${PRODUCT_PREFIX}`)
  const body = product.slice(PRODUCT_PREFIX.length)
  // Canonical unpadded base64url only: the alphabet, no padding, and bytes that re-encode to the same text.
  if (!BASE64URL_RE.test(body) || body.length % 4 === 1) return fail('BadEncoding', 'the envelope is not unpadded base64url')
  const bytes = Buffer.from(body, 'base64url')
  if (bytes.toString('base64url') !== body) return fail('BadEncoding', 'the envelope is not canonical base64url')
  let text: string
  try {
    text = utf8.decode(bytes)
  } catch {
    return fail('BadEncoding', 'the envelope is not UTF-8')
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    return fail('NotJson', 'the envelope is not JSON')
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return fail('NotObject', 'the envelope must be a JSON object')
  return validate(json)
}
