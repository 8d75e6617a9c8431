/**
 * The adapter's routing table: every active NSID of the contract, with the auth verifier it is registered with and
 * its handler (one plain function per NSID, in the module named after it), or marked as planned with the domain that
 * will serve it; planned methods answer 501 MethodNotImplemented. Retired NSIDs are not here: their lexicons are
 * kept, and the XRPC plugin answers 501 for them.
 */
import type { MethodNsid } from '@svc/lexicons/types'
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
import { claimFreeTicket } from './tickets.svc.claimFreeTicket'
import { configureTicketTiers } from './tickets.svc.configureTicketTiers'
import { createTicketHold } from './tickets.svc.createTicketHold'
import { getTicketAvailability } from './tickets.svc.getTicketAvailability'
import { xrpcMethod, type AuthVerifiers, type MethodRoute, type MethodTable } from './types'

const planned = (nsid: MethodNsid, planned: string): MethodRoute => ({ nsid, planned })

export function methodTable(auth: AuthVerifiers): MethodTable {
  const routes: MethodRoute[] = [
    xrpcMethod('money.svc.app.getConfig', { auth: auth.app, handler: getConfig }),
    xrpcMethod('money.svc.app.updateConfig', { auth: auth.app, handler: updateConfig }),
    xrpcMethod('money.svc.actor.getPayoutStatus', { auth: auth.app, handler: getPayoutStatus }),
    xrpcMethod('money.svc.actor.getProfile', { auth: auth.app, handler: getProfile }),
    xrpcMethod('money.svc.app.requestRecipientApproval', { auth: auth.app, handler: requestRecipientApproval }),
    xrpcMethod('money.svc.app.getRecipientApproval', { auth: auth.app, handler: getRecipientApproval }),
    xrpcMethod('network.svc.payment.initiate', { auth: auth.app, handler: initiate }),
    xrpcMethod('network.svc.payment.status', { auth: auth.app, handler: status }),
    xrpcMethod('money.svc.payment.registerCreatorProof', { auth: auth.app, handler: registerCreatorProof }),
    xrpcMethod('money.svc.payment.declineRecord', { auth: auth.app, handler: declineRecord }),
    xrpcMethod('money.svc.catalog.registerAppLink', { auth: auth.app, handler: registerAppLink }),
    planned('money.svc.payment.listSubscriptions', 'billing subgraph'),
    planned('money.svc.payment.cancelSubscription', 'billing subgraph'),
    planned('money.svc.billing.requestVendorMigrationBatch', 'billing subgraph'),
    xrpcMethod('tickets.svc.configureTicketTiers', { auth: auth.app, handler: configureTicketTiers }),
    xrpcMethod('tickets.svc.getTicketAvailability', { auth: auth.app, handler: getTicketAvailability }),
    xrpcMethod('tickets.svc.claimFreeTicket', { auth: auth.app, handler: claimFreeTicket }),
    xrpcMethod('tickets.svc.createTicketHold', { auth: auth.app, handler: createTicketHold }),
    planned('tickets.svc.checkInTicket', 'tickets subgraph: check-in'),
    // hosted by apps, called by this service (events issue); never served here
    planned('money.svc.event.receiveEvent', 'hosted by the app; this service calls it'),
  ]
  return new Map(routes.map((r) => [r.nsid, r]))
}

export * from './types'
