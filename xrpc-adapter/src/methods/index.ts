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
import { getRecipientApproval } from './money.svc.app.getRecipientApproval'
import { requestRecipientApproval } from './money.svc.app.requestRecipientApproval'
import { updateConfig } from './money.svc.app.updateConfig'
import { registerAppLink } from './money.svc.catalog.registerAppLink'
import { declineRecord } from './money.svc.payment.declineRecord'
import { registerCreatorProof } from './money.svc.payment.registerCreatorProof'
import { initiate } from './network.svc.payment.initiate'
import { status } from './network.svc.payment.status'
import type { MethodNsid } from '@svc/lexicons/types'
import type { MethodRoute } from './types'

const planned = (nsid: MethodNsid, planned: string): MethodRoute => ({ nsid, planned })

const routes: MethodRoute[] = [
  getConfig,
  updateConfig,
  getPayoutStatus,
  getProfile,
  requestRecipientApproval,
  getRecipientApproval,
  initiate,
  status,
  registerCreatorProof,
  declineRecord,
  registerAppLink,
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
