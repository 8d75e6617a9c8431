/**
 * What the apps domain reads from the actors domain: whether a recipient is a known actor of an environment, and
 * its payout status. The use cases ask for it themselves; in the running service it comes through the graph with the
 * apps subgraph's own key, as the service `apps` (graph-facts.ts).
 */
import type { Environment } from '@svc/vocabulary'

export interface ActorFacts {
  /** the actor of a DID in an environment, or null when it has none there */
  actor(did: string, environment: Environment): Promise<{ did: string; payoutStatus: string } | null>
}
