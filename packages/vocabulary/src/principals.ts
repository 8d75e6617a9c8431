/**
 * Names of the internal services that call the graph as `{ kind: 'service', name }`; a subgraph allows an operation to
 * a service by one of these names, never by a string of its own.
 */
export const SERVICE_PRINCIPALS = {
  /** the XRPC adapter acting for itself (request log, developer routes) */
  xrpcAdapter: 'xrpc-adapter',
  /** the hosted checkout pages on the checkout host */
  checkout: 'checkout',
  /** the events workers */
  events: 'events',
  /** the payments domain reading the facts it decides on (approvals, payout readiness, fee rates) */
  payments: 'payments',
  /** the apps domain reading other domains' facts (a recipient is a known actor) and asking events for a signing secret */
  apps: 'apps',
  /** the tickets domain reading the facts it decides on (the app's environment and its tickets module) */
  tickets: 'tickets',
} as const

export type ServicePrincipalName = (typeof SERVICE_PRINCIPALS)[keyof typeof SERVICE_PRINCIPALS]
