/**
 * The adapter's routing table: every active NSID of the contract, mapped to its gateway operation
 * (auth, GraphQL document, input and output mapping, error mapping; errors travel as contract codes
 * and a method's `errors` renames the ones its contract calls differently), or marked as
 * planned with the domain that will serve it; planned methods answer 501 MethodNotImplemented.
 * Retired NSIDs are not here: their lexicons are kept, and the XRPC plugin answers 501 for them.
 */
import { getPayoutStatus } from './money.svc.actor.getPayoutStatus'
import { getProfile } from './money.svc.actor.getProfile'
import { getConfig } from './money.svc.app.getConfig'
import { updateConfig } from './money.svc.app.updateConfig'
import type { MethodRoute } from './types'

const planned = (nsid: string, planned: string): MethodRoute => ({ nsid, planned })

const routes: MethodRoute[] = [
  getConfig,
  updateConfig,
  getPayoutStatus,
  getProfile,
  planned('money.svc.app.requestRecipientApproval', 'creator approvals (apps subgraph, payments issue)'),
  planned('money.svc.app.getRecipientApproval', 'creator approvals (apps subgraph, payments issue)'),
  planned('network.svc.payment.initiate', 'payments subgraph (payments issue)'),
  planned('network.svc.payment.status', 'payments subgraph (payments issue)'),
  planned('money.svc.payment.registerCreatorProof', 'payments subgraph (payments issue)'),
  planned('money.svc.payment.declineRecord', 'payments subgraph (payments issue)'),
  planned('money.svc.catalog.registerAppLink', 'payments subgraph (payments issue)'),
  planned('money.svc.payment.listSubscriptions', 'billing subgraph'),
  planned('money.svc.payment.cancelSubscription', 'billing subgraph'),
  planned('money.svc.billing.requestVendorMigrationBatch', 'billing subgraph'),
  planned('tickets.svc.getTicketAvailability', 'tickets subgraph'),
  planned('tickets.svc.createTicketHold', 'tickets subgraph'),
  planned('tickets.svc.claimFreeTicket', 'tickets subgraph'),
  planned('tickets.svc.checkInTicket', 'tickets subgraph'),
  planned('tickets.svc.configureTicketTiers', 'tickets subgraph'),
  // hosted by apps, called by this service (events issue); never served here
  planned('money.svc.event.receiveEvent', 'hosted by the app; this service calls it'),
]

export const methodTable: ReadonlyMap<string, MethodRoute> = new Map(routes.map((r) => [r.nsid, r]))
export * from './types'
