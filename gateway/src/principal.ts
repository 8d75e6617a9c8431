/**
 * Who may call the gateway, and as whom. Each calling process has its own bearer credential:
 *   - the XRPC adapter's token: the adapter has verified the app (service-auth), is passing an API key hash for the
 *     apps subgraph to check, a creator's dashboard session, or acts for itself or its checkout pages, and states
 *     that principal in `svc-caller`;
 *   - the events workers' token: the service `events`, whatever `svc-caller` says (a different claim is refused);
 *   - the operator token: operators and internal dashboards.
 * Anything else is refused with 401 before GraphQL runs.
 */
import { timingSafeEqual, createHash } from 'node:crypto'
import type { Principal } from '@svc/internal-context'
import { isDid, isEnvironment, SERVICE_PRINCIPALS } from '@svc/vocabulary'


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

/** The services the adapter may speak for: itself and its checkout pages. */
const ADAPTER_SERVICES: readonly string[] = [SERVICE_PRINCIPALS.xrpcAdapter, SERVICE_PRINCIPALS.checkout]
const EVENTS = { kind: 'service', name: SERVICE_PRINCIPALS.events } as const satisfies Principal

export function authenticate(
  secrets: { adapterGatewayToken: string; eventsGatewayToken: string; operatorToken: string },
  headers: { authorization?: string; caller?: string; operatorId?: string },
): Principal | null {
  const match = /^Bearer (.+)$/.exec(headers.authorization ?? '')
  if (!match?.[1]) return null
  const token = match[1]
  if (sameSecret(token, secrets.adapterGatewayToken)) {
    const caller = parseCaller(headers.caller)
    return caller && (caller.kind !== 'service' || ADAPTER_SERVICES.includes(caller.name)) ? caller : null
  }
  if (sameSecret(token, secrets.eventsGatewayToken)) {
    if (headers.caller === undefined) return { ...EVENTS }
    const caller = parseCaller(headers.caller)
    return caller?.kind === 'service' && caller.name === EVENTS.name ? { ...EVENTS } : null
  }
  if (sameSecret(token, secrets.operatorToken)) {
    return { kind: 'operator', id: headers.operatorId && /^[\w.@-]{1,64}$/.test(headers.operatorId) ? headers.operatorId : 'operator' }
  }
  return null
}
