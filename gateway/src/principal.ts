/**
 * Who is calling the gateway. A process of the service (the XRPC adapter, the events workers, a domain reading
 * another's facts) sends the internal context it signed with its own key; the gateway verifies it (key, expiry, and
 * that its issuer may state that principal) and forwards it unchanged to the subgraphs, which verify it again. An
 * operator or internal dashboard sends the operator token instead, and the gateway signs an operator context itself.
 * Anything else is refused with 401 before GraphQL runs.
 */
import { signContext, verifyContext, type CallerKeys, type Principal } from '@svc/internal-context'
import { sameSecret } from '@svc/operations'

export interface Authenticated {
  principal: Principal
  /** the context forwarded to every subgraph request */
  context: string
}

export function authenticate(
  secrets: { callerKeys: CallerKeys; operatorToken: string },
  headers: { context?: string; authorization?: string; operatorId?: string },
  requestId: string,
): Authenticated | null {
  if (headers.context !== undefined) {
    const verified = verifyContext(secrets.callerKeys, headers.context)
    return verified.ok ? { principal: verified.context.principal, context: headers.context } : null
  }
  const match = /^Bearer (.+)$/.exec(headers.authorization ?? '')
  if (!match?.[1] || !sameSecret(match[1], secrets.operatorToken)) return null
  const id = headers.operatorId && /^[\w.@-]{1,64}$/.test(headers.operatorId) ? headers.operatorId : 'operator'
  const principal: Principal = { kind: 'operator', id }
  return { principal, context: signContext({ issuer: 'gateway', key: secrets.callerKeys.gateway }, { principal, requestId }) }
}
