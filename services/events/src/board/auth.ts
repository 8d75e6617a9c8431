/**
 * Operator authentication of the board: HTTP Basic with the password OPERATOR_TOKEN (any user name; what a browser
 * asks for) or `Authorization: Bearer <OPERATOR_TOKEN>` (scripts). Compared in constant time over SHA-256 digests,
 * as the gateway compares its tokens.
 */
import { sameSecret } from '@svc/operations'

/** The challenge of every 401, so a browser asks for the credentials. */
export const BOARD_REALM = 'Basic realm="svc board"'

/** Why a request is refused, for the log (never the credential itself). */
export type OperatorAuthFailure = 'missing' | 'malformed' | 'wrong-token'

/** Checks an `Authorization` header against the operator token. */
export function checkOperator(authorization: string | undefined, operatorToken: string): { ok: true; scheme: 'basic' | 'bearer' } | { ok: false; reason: OperatorAuthFailure } {
  if (!authorization) return { ok: false, reason: 'missing' }
  const match = /^(Basic|Bearer) +(\S+) *$/i.exec(authorization)
  if (!match?.[1] || !match[2]) return { ok: false, reason: 'malformed' }
  const scheme = match[1].toLowerCase() as 'basic' | 'bearer'
  let presented = match[2]
  if (scheme === 'basic') {
    const decoded = Buffer.from(presented, 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon < 0) return { ok: false, reason: 'malformed' }
    presented = decoded.slice(colon + 1)
  }
  return sameSecret(presented, operatorToken) ? { ok: true, scheme } : { ok: false, reason: 'wrong-token' }
}
