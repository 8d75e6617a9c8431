/**
 * The terms a creator approves (payment types, fee share, public records), parsed from the app's request, and
 * their hash: the creator accepts the hash it was shown, and an approval covers only the terms of that hash.
 */
import { createHash } from 'node:crypto'
import { APPROVAL_PAYMENT_TYPES, ATTESTATION_VISIBILITIES } from '../../models'
import { invalid } from './errors'
import type { PublicRecordsInput } from '../../generated/graph-types'

export type PaymentType = (typeof APPROVAL_PAYMENT_TYPES)[number]
export type AttestationVisibility = (typeof ATTESTATION_VISIBILITIES)[number]

/** What the creator approves. requestReason and setupReturnUrl are not terms. */
export interface ApprovalTerms {
  paymentTypes: PaymentType[]
  feeShareBps: number
  publicRecords: { enabled: boolean; attestation: AttestationVisibility }
}

/** The terms as a request document stores them, with their hash. */
export interface StoredTerms {
  paymentTypes: PaymentType[]
  feeShareBps: number
  publicRecords: { enabled: boolean; defaults: { attestation: AttestationVisibility } }
  termsHash: string
}

/** publicRecords as the app sends it. */

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

export function storedTermsOf(terms: ApprovalTerms): StoredTerms {
  return {
    paymentTypes: terms.paymentTypes,
    feeShareBps: terms.feeShareBps,
    publicRecords: { enabled: terms.publicRecords.enabled, defaults: { attestation: terms.publicRecords.attestation } },
    termsHash: termsHashOf(terms),
  }
}

export function parsePaymentTypes(value: unknown): PaymentType[] {
  if (!Array.isArray(value) || value.length === 0) invalid(`paymentTypes must list at least one of ${APPROVAL_PAYMENT_TYPES.join(', ')}`)
  for (const t of value) {
    if (!(APPROVAL_PAYMENT_TYPES as readonly unknown[]).includes(t)) {
      invalid(`paymentTypes: ${JSON.stringify(t)} is not a payment type (${APPROVAL_PAYMENT_TYPES.join(', ')})`)
    }
  }
  return [...new Set(value as PaymentType[])].sort()
}

/** The requested fee share, or null when the app leaves it to its registered fee share. */
export function parseFeeShare(value: unknown): number | null {
  if (value === undefined || value === null) return null
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 10000) {
    invalid('feeShareBps must be an integer from 0 to 10000')
  }
  return value
}

export function parsePublicRecords(value: PublicRecordsInput | null | undefined): ApprovalTerms['publicRecords'] {
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
