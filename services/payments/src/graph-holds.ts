/**
 * The tickets domain's holds as a ticket checkout asks for them (domain/context.ts, TicketHolds), through the
 * gateway with this subgraph's own key, as the service `payments`. A failure throws: the payment is not attempted
 * (secure), or the checkout stays `processing` until the sweep or a read settles it again (settle).
 */
import { randomUUID } from 'node:crypto'
import type { GatewayClient } from '@svc/gateway-client'
import { graphql } from '@svc/graph'
import type { Principal } from '@svc/internal-context'
import { SERVICE_PRINCIPALS } from '@svc/vocabulary'
import type { TicketHolds } from './domain/context'

const PAYMENTS: Principal = { kind: 'service', name: SERVICE_PRINCIPALS.payments }

const SECURE = graphql(`mutation PaymentsSecureTicketHold($holdId: ID!) { secureTicketHold(holdId: $holdId) }`)
const SETTLE = graphql(`mutation PaymentsSettleTicketHold($holdId: ID!, $payment: HoldPaymentInput) { settleTicketHold(holdId: $holdId, payment: $payment) { id } }`)

/** `requestId` ties the calls to the request being served; the sweep's calls get their own. */
export function createGraphHolds(gateway: GatewayClient, requestId: () => string = randomUUID): TicketHolds {
  return {
    async secure(holdId) {
      return (await gateway.query(SECURE, { holdId }, { principal: PAYMENTS, requestId: requestId() })).secureTicketHold
    },
    async settle(holdId, payment) {
      await gateway.query(SETTLE, { holdId, payment }, { principal: PAYMENTS, requestId: requestId() })
    },
  }
}
