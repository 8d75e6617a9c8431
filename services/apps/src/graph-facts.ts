/**
 * The apps domain's calls to other domains, through the gateway with this subgraph's own key, as the service `apps`:
 * its reads of the actors domain (domain/actor-facts.ts) and the events domain's ensureSigningSecret
 * (domain/signing-secrets.ts).
 */
import type { GatewayClient } from '@svc/gateway-client'
import { graphql } from '@svc/graph'
import type { Principal } from '@svc/internal-context'
import { SERVICE_PRINCIPALS } from '@svc/vocabulary'
import type { Environment } from '@svc/vocabulary'
import type { ActorFacts } from './domain/actor-facts'
import type { SigningSecrets } from './domain/signing-secrets'

const APPS: Principal = { kind: 'service', name: SERVICE_PRINCIPALS.apps }

const ENSURE_SIGNING_SECRET = graphql(`mutation AppsEnsureSigningSecret($appDid: ID!, $environment: String!) {
  ensureSigningSecret(appDid: $appDid, environment: $environment) { secret }
}`)

const ACTOR = graphql(`query AppsActorFacts($did: ID!, $environment: String!) { actor(did: $did, environment: $environment) { did payoutStatus } }`)

/** `requestId` ties the reads to the request being served (the logs of every hop carry it). */
export function createGraphFacts(gateway: GatewayClient, requestId: string): ActorFacts {
  const as = { principal: APPS, requestId }
  return {
    async actor(did, environment) {
      const data = await gateway.query(ACTOR, { did, environment }, as)
      return data.actor
    },
  }
}

export function createGraphSigningSecrets(gateway: GatewayClient, requestId: string): SigningSecrets {
  const as = { principal: APPS, requestId }
  return {
    async ensure(appDid: string, environment: Environment) {
      const data = await gateway.query(ENSURE_SIGNING_SECRET, { appDid, environment }, as)
      return { secret: data.ensureSigningSecret.secret }
    },
  }
}
