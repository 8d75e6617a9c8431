/** Bounded text from callers: lexicon strings limit both graphemes (what a person counts) and bytes. */
import { ContractError } from '@svc/errors'

/**
 * C0 and C1 controls, and the bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069): text
 * shown to a buyer could otherwise be displayed in another order than it is written ("Donation ‮00.1$ :latoT" shows a
 * made-up total). The marks U+200E/U+200F that right-to-left text needs stay allowed.
 */
// eslint-disable-next-line no-control-regex
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/

const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' })

/** Number of user-perceived characters. */
export function graphemeLength(value: string): number {
  let n = 0
  for (const _ of segmenter.segment(value)) n++
  return n
}

/** Within a lexicon's maxGraphemes and maxLength (UTF-8 bytes). */
export function isWithinBounds(value: string, bounds: { maxGraphemes: number; maxBytes: number }): boolean {
  return Buffer.byteLength(value) <= bounds.maxBytes && graphemeLength(value) <= bounds.maxGraphemes
}

export function hasControlCharacters(value: string): boolean {
  return CONTROL_CHARACTERS.test(value)
}

/**
 * A name shown to people (an actor's display name, an app's name on the creator's dashboard): trimmed, empty as none,
 * at most 64 characters, no control characters (above). Undefined stays undefined (not given).
 */
export function parseDisplayName<T extends string | null | undefined>(value: T, field: string): string | null | Exclude<T, string> {
  if (value === undefined || value === null) return value as Exclude<T, string>
  const trimmed = value.trim()
  if (trimmed === '') return null
  if (!isWithinBounds(trimmed, { maxGraphemes: 64, maxBytes: 640 })) throw new ContractError('InvalidRequest', `${field} must be at most 64 characters`)
  if (hasControlCharacters(trimmed)) throw new ContractError('InvalidRequest', `${field} must not contain control characters`)
  return trimmed
}
