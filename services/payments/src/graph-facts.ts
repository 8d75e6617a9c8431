/**
 * The payments domain's reads of other domains (domain/app-facts.ts), through the gateway with this subgraph's own
 * key, as the service `payments`: apps' `appAccessFor` for the app being served, extended by actors (`profile`,
 * an approval's `recipient`). Their contract errors (AppNotRegistered, ActorNotFound, …) reach the caller unchanged.
 */
import type { GatewayClient } from '@svc/gateway-client'
import { graphql } from '@svc/graph'
import type { Principal } from '@svc/internal-context'
import { parseEnvironment, SERVICE_PRINCIPALS } from '@svc/vocabulary'
import type { AppFacts } from './domain/app-facts'

const PAYMENTS: Principal = { kind: 'service', name: SERVICE_PRINCIPALS.payments }

const ENVIRONMENT = graphql(`query PaymentsAppEnvironment($appDid: ID!, $environment: String) {
  appAccessFor(appDid: $appDid, environment: $environment) { environment }
}`)

const CHECKOUT = graphql(`query PaymentsCheckoutFacts($appDid: ID!, $environment: String, $recipient: String!) {
  appAccessFor(appDid: $appDid, environment: $environment) {
    environment
    config { feeShareBps ticketFee { bps flatAmount flatCurrency passToBuyer } }
    recipientApproval(recipientDid: $recipient) {
      id revision status paymentTypes feeShareBps recipient { did displayName payable payoutStatus paymentTypes }
    }
  }
}`)

const APP_LINK = graphql(`query PaymentsAppLinkFacts($appDid: ID!, $environment: String, $repo: String!) {
  appAccessFor(appDid: $appDid, environment: $environment) { environment config { appUrl } repo: profile(actor: $repo) { did } }
}`)

const PROOF_DELEGATION = graphql(`query PaymentsProofDelegation($appDid: ID!, $environment: String, $recipient: String!) {
  appAccessFor(appDid: $appDid, environment: $environment) { environment recipientApproval(recipientDid: $recipient) { status publicRecords { enabled } } }
}`)

/** `requestId` ties the reads to the request being served (the logs of every hop carry it). */
export function createGraphFacts(gateway: GatewayClient, requestId: string): AppFacts {
  const as = { principal: PAYMENTS, requestId }
  return {
    async environment(appDid, environment) {
      const data = await gateway.query(ENVIRONMENT, { appDid, environment }, as)
      return parseEnvironment(data.appAccessFor.environment)
    },
    async checkout(appDid, environment, recipient) {
      const { appAccessFor: a } = await gateway.query(CHECKOUT, { appDid, environment, recipient }, as)
      const approval = a.recipientApproval
      return {
        environment: a.environment,
        serviceFee: a.config.ticketFee,
        feeShareCapBps: a.config.feeShareBps,
        approval: approval ? { id: approval.id, revision: approval.revision, status: approval.status, paymentTypes: approval.paymentTypes, feeShareBps: approval.feeShareBps } : null,
        recipient: approval?.recipient ?? null,
      }
    },
    async appLink(appDid, environment, repo) {
      // an unknown repository is ActorNotFound from the actors subgraph
      const { appAccessFor: a } = await gateway.query(APP_LINK, { appDid, environment, repo }, as)
      return { environment: parseEnvironment(a.environment), appUrl: a.config.appUrl, repoKnown: a.repo.did === repo }
    },
    async proofDelegation(appDid, environment, recipient) {
      const { appAccessFor: a } = await gateway.query(PROOF_DELEGATION, { appDid, environment, recipient }, as)
      const approval = a.recipientApproval
      return { environment: parseEnvironment(a.environment), delegated: approval?.status === 'approved' && approval.publicRecords.enabled }
    },
  }
}
