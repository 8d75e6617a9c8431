/**
 * The tickets domain's reads of the apps domain (domain/app-facts.ts), and the checkouts it starts in the payments
 * domain (domain/context.ts, HoldCheckouts), through the gateway with this subgraph's own key, as the service
 * `tickets`. Apps' contract errors (AppNotRegistered, AppEnvironmentNotConfigured) reach the caller unchanged.
 */
import type { GatewayClient } from '@svc/gateway-client'
import { graphql } from '@svc/graph'
import type { Principal } from '@svc/internal-context'
import { parseEnvironment, SERVICE_PRINCIPALS } from '@svc/vocabulary'
import type { AppFacts } from './domain/app-facts'
import type { HoldCheckouts } from './domain/context'
import { sharedRun } from '@svc/subgraph-server'

const TICKETS: Principal = { kind: 'service', name: SERVICE_PRINCIPALS.tickets }

const ACCESS = graphql(`query TicketsAppAccess($appDid: ID!, $environment: String) {
  appAccessFor(appDid: $appDid, environment: $environment) { environment config { modules { tickets } } }
}`)

const START_CHECKOUT = graphql(`mutation TicketsStartCheckout($input: StartTicketCheckoutInput!) {
  startTicketCheckout(input: $input) { url token }
}`)

/** A hold's checkout, started in the payments domain as the service `tickets`. */
export function createGraphCheckouts(gateway: GatewayClient, requestId: string): HoldCheckouts {
  return {
    async start(input) {
      const { startTicketCheckout } = await gateway.query(START_CHECKOUT, { input: { ...input, expiresAt: input.expiresAt.toISOString() } }, { principal: TICKETS, requestId })
      return { url: startTicketCheckout.url, token: startTicketCheckout.token }
    },
  }
}

/**
 * `requestId` ties the reads to the request being served (the logs of every hop carry it). Concurrent requests of
 * one app share its read (sharedRun of @svc/subgraph-server): a crowd of buyers is one app asking the same many times at once.
 */
export function createGraphFacts(gateway: GatewayClient, requestId: string): AppFacts {
  const as = { principal: TICKETS, requestId }
  return {
    ticketsAccess: (appDid, environment) =>
      sharedRun(gateway, JSON.stringify(['access', appDid, environment]), async () => {
        const { appAccessFor: a } = await gateway.query(ACCESS, { appDid, environment }, as)
        return { environment: parseEnvironment(a.environment), ticketsEnabled: a.config.modules.tickets }
      }),
  }
}
