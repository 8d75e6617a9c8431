/**
 * What the tickets domain reads from the apps domain, for the app it serves: the environment the call acts in and
 * whether the app has the tickets module on there. The use cases ask for it themselves; in the running service it
 * comes through the graph with the tickets subgraph's own key, as the service `tickets` (graph-facts.ts).
 */
import type { Environment } from '@svc/vocabulary'

export interface TicketsAccess {
  environment: Environment
  ticketsEnabled: boolean
}

export interface AppFacts {
  /** the app's environment (the one given must be configured; none given: the app's only one) and its tickets module */
  ticketsAccess(appDid: string, environment: string | null): Promise<TicketsAccess>
}
