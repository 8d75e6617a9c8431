/**
 * Money on the checkout pages: amounts are integer minor units of a lowercase ISO 4217 currency; the number of
 * minor-unit digits is ISO 4217's exponent (not CLDR's display digits, which differ for a few currencies).
 */

/** ISO 4217 currencies whose exponent is not 2. Every other code has 2. */
const EXPONENTS: Readonly<Record<string, number>> = {
  // exponent 0
  bif: 0, clp: 0, djf: 0, gnf: 0, isk: 0, jpy: 0, kmf: 0, krw: 0, pyg: 0, rwf: 0, ugx: 0, uyi: 0, vnd: 0, vuv: 0,
  xaf: 0, xof: 0, xpf: 0,
  // exponent 3
  bhd: 3, iqd: 3, jod: 3, kwd: 3, lyd: 3, omr: 3, tnd: 3,
  // exponent 4
  clf: 4, uyw: 4,
}

/** Minor-unit digits of a currency (lowercase or uppercase code). */
export function minorUnitDigits(currency: string): number {
  return EXPONENTS[currency.toLowerCase()] ?? 2
}

/** `1055, 'usd'` → `$10.55`; `1000, 'jpy'` → `¥1,000`; `1500, 'kwd'` → `KWD 1.500`. */
export function formatMoney(amount: number, currency: string, locale = 'en-US'): string {
  const digits = minorUnitDigits(currency)
  const code = currency.toUpperCase()
  const value = amount / 10 ** digits
  try {
    return new Intl.NumberFormat(locale, {
      style: 'currency',
      currency: code,
      currencyDisplay: 'symbol',
      minimumFractionDigits: digits,
      maximumFractionDigits: digits,
    }).format(value)
  } catch {
    // not a well-formed currency code: show the number and the code
    return `${value.toFixed(digits)} ${code}`
  }
}
