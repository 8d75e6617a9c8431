/** What `npm run dev` prints once every component answers: the README shows it as printed (test/readme.test.ts). */
import type { Config } from '@svc/config'

export function devBanner(config: Config): string {
  return `dev: the service is up (Ctrl-C stops everything)
  XRPC API          ${config.baseUrl}/xrpc/{nsid}        e.g. ${config.baseUrl}/xrpc/_health
  checkout host     ${config.checkoutUrl}               hosted checkout /checkout/<token>, developer routes /api/…
  creator dashboard ${config.dashboardUrl}     (sign in with: npm run operator:actors -- dashboard-link --did <did> --env test)
  GraphQL gateway   http://${config.host}:${config.ports.gateway}/graphql   (GraphiQL: http://${config.host}:${config.ports.gateway}/graphiql,
                    header Authorization: Bearer <OPERATOR_TOKEN>; dev default in packages/config)
  apps subgraph     ${config.subgraphs.apps}  (internal: refuses calls without a context the service signed)
  actors subgraph   ${config.subgraphs.actors}  (internal, likewise)
  payments subgraph ${config.subgraphs.payments}  (internal, likewise)
  events subgraph   ${config.subgraphs.events}  (internal, likewise: deliveries, signing secrets)
  tickets subgraph  ${config.subgraphs.tickets}  (internal, likewise: tiers, capacity, tickets)
  events workers    relay → domain-events → webhook-deliveries → your webhook or XRPC receiver (docs/events.md);
                    http://${config.host}:${config.ports.workers}/readyz and /metrics (/metrics of every process but the board: Bearer <METRICS_TOKEN>)
  operators' board  http://${config.host}:${config.ports.board}/board   (user: any, password: OPERATOR_TOKEN; dev default in packages/config)
Next: npm run operator -- quickstart
      npm run operator:actors -- create-creator --did <did> --env test --payout-status ready
`
}
