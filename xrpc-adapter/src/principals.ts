/** The principals the adapter calls the gateway as when it acts for itself rather than for a verified app. */
import type { Principal } from '@svc/internal-context'
import { SERVICE_PRINCIPALS } from '@svc/vocabulary'

/** The adapter acting on its own behalf (the request log, writes after a checked call): the internal service `xrpc-adapter`. */
export const ADAPTER_PRINCIPAL: Principal = { kind: 'service', name: SERVICE_PRINCIPALS.xrpcAdapter }
