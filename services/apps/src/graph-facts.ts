/**
 * The apps domain's reads of the actors domain (domain/actor-facts.ts), through the gateway with this subgraph's own
 * key, as the service `apps`.
 */
import type { GatewayClient } from '@svc/gateway-client'
import type { Principal } from '@svc/internal-context'
import { SERVICE_PRINCIPALS } from '@svc/vocabulary'
import type { ActorFacts } from './domain/actor-facts'

const APPS: Principal = { kind: 'service', name: SERVICE_PRINCIPALS.apps }

const ACTOR = `query AppsActorFacts($did: ID!, $environment: String!) { actor(did: $did, environment: $environment) { did payoutStatus } }`

/** `requestId` ties the reads to the request being served (the logs of every hop carry it). */
export function createGraphFacts(gateway: GatewayClient, requestId: string): ActorFacts {
  const as = { principal: APPS, requestId }
  return {
    async actor(did, environment) {
      const data = await gateway.query<{ actor: { did: string; payoutStatus: string } | null }>(ACTOR, { did, environment }, as)
      return data.actor
    },
  }
}
