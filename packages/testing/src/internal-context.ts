/** Internal contexts for tests that call a subgraph or the gateway directly, as the process that may state them would. */
import { randomBytes } from 'node:crypto'
import { ISSUERS, mayAssert, signContext, type CallerKeys, type Principal } from '@svc/internal-context'

/** A fresh key per issuer. */
export function testCallerKeys(): CallerKeys {
  return Object.fromEntries(ISSUERS.map((issuer) => [issuer, randomBytes(32).toString('hex')])) as unknown as CallerKeys
}

/** A context for `principal`, signed by the issuer allowed to state it (the adapter for apps, the gateway for operators…). */
export function signedContext(keys: CallerKeys, principal: Principal, opts: { requestId?: string; now?: number } = {}): string {
  const issuer = ISSUERS.find((i) => mayAssert(i, principal))
  if (!issuer) throw new Error(`no issuer may state ${JSON.stringify(principal)}`)
  return signContext({ issuer, key: keys[issuer] }, { principal, requestId: opts.requestId ?? `req-${randomBytes(4).toString('hex')}` }, opts.now)
}
