/** Currencies: a lowercase ISO 4217 code that the runtime's ICU knows (Stripe's form: `usd`, `eur`, `jpy`). */
const KNOWN = new Set(Intl.supportedValuesOf('currency').map((code) => code.toLowerCase()))

/** A lowercase three-letter ISO 4217 code in use (`abc` is three letters but no currency). */
export function isCurrencyCode(value: unknown): value is string {
  return typeof value === 'string' && /^[a-z]{3}$/.test(value) && KNOWN.has(value)
}
