/**
 * The two capabilities of a checkout, both derived, never stored:
 *
 *   status token   `pst_<env>_` + 43 base64url   the app's: answers network.svc.payment.status
 *   browser token  `cko_<env>_` + 43 base64url   the buyer's: opens the hosted checkout page
 *
 * Each is base64url(HMAC-SHA256(tokenSecret, `<kind>:<checkoutId>:<nonce>`)) with a 32-byte random nonce stored on the
 * checkout, so a repeat initiate can give the same tokens back while the database holds only their SHA-256 hashes
 * (and the nonce, useless without the secret). The two are distinct: a status token never opens the page, a browser
 * token never answers status (their prefixes differ, and each is looked up only by its own hash).
 */
import { createHash, createHmac, randomBytes } from 'node:crypto'
import type { Environment } from '@svc/vocabulary'

export type TokenKind = 'status' | 'browser'

const PREFIX: Record<TokenKind, string> = { status: 'pst', browser: 'cko' }

export const STATUS_TOKEN_RE = /^pst_(test|live)_[A-Za-z0-9_-]{43}$/
export const BROWSER_TOKEN_RE = /^cko_(test|live)_[A-Za-z0-9_-]{43}$/

export function newNonce(): string {
  return randomBytes(32).toString('base64url')
}

export function deriveToken(secret: string, kind: TokenKind, environment: Environment, checkoutId: string, nonce: string): string {
  const mac = createHmac('sha256', secret).update(`${kind}:${checkoutId}:${nonce}`).digest('base64url')
  return `${PREFIX[kind]}_${environment}_${mac}`
}

/** What the database stores of a token: SHA-256, hex. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex')
}

/** The environment a well-formed token names, or null when the token is not of that kind's form. */
export function tokenEnvironment(kind: TokenKind, token: string): Environment | null {
  const m = (kind === 'status' ? STATUS_TOKEN_RE : BROWSER_TOKEN_RE).exec(token)
  return m ? (m[1] as Environment) : null
}
