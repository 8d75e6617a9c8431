/** Bounded text from callers: lexicon strings limit both graphemes (what a person counts) and bytes. */

// eslint-disable-next-line no-control-regex
export const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/

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
