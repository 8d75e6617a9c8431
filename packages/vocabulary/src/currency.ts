/**
 * Currencies: a lowercase ISO 4217 code of a currency in use (Stripe's form: `usd`, `eur`, `jpy`). The list is fixed
 * here rather than read from the runtime's ICU, whose list changes with the Node version: the SDK that builds a
 * product and the service that parses it must agree. Left out of ICU's list (Node 20): the units of account XDR and
 * XSU, and the withdrawn ANG (now XCG), BGN and HRK (now EUR), CUC, SLL (now SLE) and ZWL (now ZWG). A tier stored
 * earlier in one of these can no longer be sold: its holds are refused (InvalidRequest, "invalid ticket checkout:
 * currency …") until the organizer reprices it.
 */
const CURRENCIES = new Set(
  `
  aed afn all amd aoa ars aud awg azn bam bbd bdt bhd bif bmd bnd bob brl
  bsd btn bwp byn bzd cad cdf chf clp cny cop crc cup cve czk djf dkk dop dzd egp
  ern etb eur fjd fkp gbp gel ghs gip gmd gnf gtq gyd hkd hnl htg huf idr ils inr
  iqd irr isk jmd jod jpy kes kgs khr kmf kpw krw kwd kyd kzt lak lbp lkr lrd lsl
  lyd mad mdl mga mkd mmk mnt mop mru mur mvr mwk mxn myr mzn nad ngn nio nok npr
  nzd omr pab pen pgk php pkr pln pyg qar ron rsd rub rwf sar sbd scr sdg sek sgd
  shp sle sos srd ssp stn svc syp szl thb tjs tmt tnd top try ttd twd tzs uah ugx
  usd uyu uzs ves vnd vuv wst xaf xcd xcg xof xpf yer zar zmw zwg
`
    .trim()
    .split(/\s+/),
)

/** A lowercase three-letter ISO 4217 code in use (`abc` is three letters but no currency). */
export function isCurrencyCode(value: unknown): value is string {
  return typeof value === 'string' && CURRENCIES.has(value)
}
