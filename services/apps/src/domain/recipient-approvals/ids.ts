/** Approval request ids. */
import { randomBytes } from 'node:crypto'

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'

/** `apr_` + 24 uniformly random base62 characters (about 143 bits). */
export function newApprovalId(): string {
  let out = ''
  while (out.length < 24) {
    for (const byte of randomBytes(32)) {
      if (byte < 248 && out.length < 24) out += BASE62[byte % 62] // 248 = 4 × 62: no modulo bias
    }
  }
  return `apr_${out}`
}
