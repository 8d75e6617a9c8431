/**
 * Who may call the gateway, and as whom. Two bearer credentials are accepted:
 *   - the XRPC adapter's token: the adapter has verified the app (service-auth) or is passing an API
 *     key hash for the apps subgraph to check, and states that principal in `svc-caller`;
 *   - the operator token: operators and internal dashboards.
 * Anything else is refused with 401 before GraphQL runs.
 */
import { timingSafeEqual, createHash } from 'node:crypto'
import type { Principal } from '@svc/internal-context'
import { isDid, isEnvironment } from '@svc/vocabulary'


function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest()
  const hb = createHash('sha256').update(b).digest()
  return timingSafeEqual(ha, hb)
}

function parseCaller(raw: string | undefined): Principal | null {
  if (!raw) return null
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch {
    return null
  }
  if (typeof value !== 'object' || value === null) return null
  const v = value as Record<string, unknown>
  if (v.kind === 'app' && typeof v.appDid === 'string' && isDid(v.appDid)) return { kind: 'app', appDid: v.appDid }
  if (v.kind === 'apiKey' && typeof v.keyHash === 'string' && /^[0-9a-f]{64}$/.test(v.keyHash)) return { kind: 'apiKey', keyHash: v.keyHash }
  if (v.kind === 'service' && typeof v.name === 'string') return { kind: 'service', name: v.name }
  if (
    v.kind === 'dashboard' &&
    typeof v.actorDid === 'string' &&
    isDid(v.actorDid) &&
    isEnvironment(v.environment) &&
    typeof v.sessionId === 'string'
  ) {
    return { kind: 'dashboard', actorDid: v.actorDid, environment: v.environment, sessionId: v.sessionId }
  }
  return null
}

export function authenticate(
  secrets: { adapterGatewayToken: string; operatorToken: string },
  headers: { authorization?: string; caller?: string; operatorId?: string },
): Principal | null {
  const match = /^Bearer (.+)$/.exec(headers.authorization ?? '')
  if (!match?.[1]) return null
  const token = match[1]
  if (sameSecret(token, secrets.adapterGatewayToken)) return parseCaller(headers.caller)
  if (sameSecret(token, secrets.operatorToken)) {
    return { kind: 'operator', id: headers.operatorId && /^[\w.@-]{1,64}$/.test(headers.operatorId) ? headers.operatorId : 'operator' }
  }
  return null
}
