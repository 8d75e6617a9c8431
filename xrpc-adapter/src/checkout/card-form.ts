/**
 * The card form of the hosted checkout page (application/x-www-form-urlencoded). Only what the GraphQL input's types
 * need is checked here (the expiry must become two integers); whether the card itself is acceptable (number, CVC,
 * expiry in the past, …) is the payments subgraph's decision (InvalidRequest).
 */
import type { GraphTypes } from '@svc/graph'

/** Field names of the form (the page and the parser share them); the card ones are CardInput's names. */
export const CARD_FIELDS = {
  number: 'number',
  /** `MM/YY` in one field (what the page shows) … */
  expiry: 'expiry',
  /** … or month and year in two fields */
  expMonth: 'expMonth',
  expYear: 'expYear',
  cvc: 'cvc',
  name: 'name',
} as const

/** The card as the payments subgraph's SDL declares it (`input CardInput`). */
export type CardInput = GraphTypes.CardInput

/** The field a refused form names (the page marks it invalid and puts the cursor in it). */
export type CardField = 'number' | 'expiry' | 'cvc'

export type CardFormResult = { ok: true; card: CardInput; nameOnCard: string | null } | { ok: false; message: string; field: CardField; nameOnCard: string | null }

const MAX_FIELD = 200

/** One string value of a form field: absent, empty, repeated or over-long values give ''. */
function field(body: Record<string, unknown>, name: string): string {
  const value = body[name]
  if (typeof value !== 'string' || value.length > MAX_FIELD) return ''
  return value.trim()
}

function toYear(text: string): number {
  const n = Number(text)
  return text.length === 2 ? 2000 + n : n
}

/** `MM/YY`, `MM / YY`, `MM/YYYY`, `MM-YY`, `MMYY`, or separate `expMonth` / `expYear` fields. */
function readExpiry(body: Record<string, unknown>): { month: number; year: number } | null {
  const combined = field(body, CARD_FIELDS.expiry)
  if (combined) {
    const m = /^(\d{1,2})\s*[/\-.]?\s*(\d{2}|\d{4})$/.exec(combined) ?? /^(\d{2})(\d{2})$/.exec(combined)
    if (!m) return null
    return { month: Number(m[1]), year: toYear(m[2]!) }
  }
  const month = field(body, CARD_FIELDS.expMonth)
  const year = field(body, CARD_FIELDS.expYear)
  if (!/^\d{1,2}$/.test(month) || !/^(\d{2}|\d{4})$/.test(year)) return null
  return { month: Number(month), year: toYear(year) }
}

/** The most the page's expiry field holds (its `maxlength`). */
export const EXPIRY_MAX_LENGTH = 7

/**
 * The expiry as the buyer typed it, to put back into the form after a refusal (as the name is; never the number or
 * the CVC). Only what fits the page's field is kept, so a card number posted in its place is never echoed.
 */
export function keptExpiry(body: unknown): string | null {
  const form = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {}
  const combined = field(form, CARD_FIELDS.expiry)
  const month = field(form, CARD_FIELDS.expMonth)
  const year = field(form, CARD_FIELDS.expYear)
  const typed = combined || (/^\d{1,2}$/.test(month) && /^(\d{2}|\d{4})$/.test(year) ? `${month}/${year}` : '')
  return typed && typed.length <= EXPIRY_MAX_LENGTH ? typed : null
}

export function readCardForm(body: unknown): CardFormResult {
  const form = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {}
  const nameOnCard = field(form, CARD_FIELDS.name) || null
  const fail = (message: string, field: CardField): CardFormResult => ({ ok: false, message, field, nameOnCard })
  // spaces and dashes are how people type card numbers; everything else is left for the processor to judge
  const number = field(form, CARD_FIELDS.number).replace(/[\s-]/g, '')
  if (!number) return fail('Enter your card number.', 'number')
  const expiry = readExpiry(form)
  if (!expiry) return fail('Enter the expiry date as MM/YY.', 'expiry')
  if (expiry.month < 1 || expiry.month > 12) return fail('Enter a valid expiry month (01 to 12).', 'expiry')
  const cvc = field(form, CARD_FIELDS.cvc)
  if (!cvc) return fail('Enter the security code (CVC).', 'cvc')
  return { ok: true, nameOnCard, card: { number, expMonth: expiry.month, expYear: expiry.year, cvc, name: nameOnCard } }
}

/**
 * A message safe to show next to the form: never repeats the card number or the CVC the buyer typed, even when
 * an upstream message quotes them.
 */
export function scrubCardData(message: string, card: Pick<CardInput, 'number' | 'cvc'> | null): string {
  if (!card) return message
  let out = message
  if (card.number.length >= 6) out = out.split(card.number).join('••••')
  if (/^\d{3,4}$/.test(card.cvc)) out = out.replace(new RegExp(`(?<!\\d)${card.cvc}(?!\\d)`, 'g'), '•••')
  return out
}
