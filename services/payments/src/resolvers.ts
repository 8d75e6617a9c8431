import type { GraphQLResolverMap } from '@apollo/subgraph'
import { ContractError } from '@svc/errors'
import type {
  MutationCancelCheckoutArgs,
  MutationLockCheckoutArgs,
  MutationDeclinePaymentRecordArgs,
  MutationInitiateCheckoutArgs,
  MutationStartTicketCheckoutArgs,
  MutationPayCheckoutArgs,
  MutationRegisterAppLinkArgs,
  MutationRegisterCreatorProofArgs,
  QueryCheckoutArgs,
  QueryPaymentRecordArgs,
  QueryPaymentStatusArgs,
} from './generated/graph-types'
import type { SubgraphContext } from '@svc/subgraph-server'
import { cancelCheckout, lockCheckout } from './domain/close-checkout'
import { getCheckout } from './domain/checkout-view'
import type { ServingPayments } from './domain/context'
import { initiateCheckout } from './domain/initiate-checkout'
import { startTicketCheckout } from './domain/start-ticket-checkout'
import { payCheckout } from './domain/pay-checkout'
import { getPaymentStatus } from './domain/payment-status'
import { findPaymentRecord } from './domain/payment-records'
import { declinePaymentRecord, registerCreatorProof } from './domain/proofs'
import { registerAppLink } from './domain/app-links'
import { SERVICE_PRINCIPALS } from '@svc/vocabulary'

export interface PaymentsContext extends SubgraphContext {
  domain: ServingPayments
}

/** The calling app's DID (app principal only). */
function appOnly(ctx: PaymentsContext): string {
  const p = ctx.principal
  if (p.kind !== 'app') throw new ContractError('NotAllowed', 'this operation is for app callers')
  return p.appDid
}

/** The calling app's DID, or null for an operator (who may read any). */
function appOrOperator(ctx: PaymentsContext): string | null {
  const p = ctx.principal
  if (p.kind === 'operator') return null
  return appOnly(ctx)
}

function checkoutPage(ctx: PaymentsContext, opts: { operatorMayRead: boolean }): void {
  const p = ctx.principal
  if (p.kind === 'service' && p.name === SERVICE_PRINCIPALS.checkout) return
  if (opts.operatorMayRead && p.kind === 'operator') return
  throw new ContractError('NotAllowed', 'this operation is for the hosted checkout pages')
}

function operatorOnly(ctx: PaymentsContext): void {
  if (ctx.principal.kind !== 'operator') throw new ContractError('NotAllowed', 'this operation is for operator callers')
}

export const resolvers: GraphQLResolverMap<PaymentsContext> = {
  Query: {
    paymentStatus: (_: unknown, args: QueryPaymentStatusArgs, ctx: PaymentsContext) =>
      getPaymentStatus(ctx.domain, { token: args.token, appDid: appOrOperator(ctx) }),
    checkout: (_: unknown, args: QueryCheckoutArgs, ctx: PaymentsContext) => {
      checkoutPage(ctx, { operatorMayRead: true })
      return getCheckout(ctx.domain, args.browserToken)
    },
    paymentRecord: (_: unknown, args: QueryPaymentRecordArgs, ctx: PaymentsContext) => {
      operatorOnly(ctx)
      return findPaymentRecord(ctx.domain, args.uri, args.environment)
    },
  },
  Mutation: {
    initiateCheckout: (_: unknown, args: MutationInitiateCheckoutArgs, ctx: PaymentsContext) =>
      initiateCheckout(ctx.domain, { appDid: appOnly(ctx), product: args.product }),
    startTicketCheckout: (_: unknown, args: MutationStartTicketCheckoutArgs, ctx: PaymentsContext) => {
      const p = ctx.principal
      if (p.kind !== 'service' || p.name !== SERVICE_PRINCIPALS.tickets) throw new ContractError('NotAllowed', 'this operation is for the tickets domain')
      return startTicketCheckout(ctx.domain, args.input)
    },
    payCheckout: (_: unknown, args: MutationPayCheckoutArgs, ctx: PaymentsContext) => {
      checkoutPage(ctx, { operatorMayRead: false })
      return payCheckout(ctx.domain, args.browserToken, args.card)
    },
    cancelCheckout: (_: unknown, args: MutationCancelCheckoutArgs, ctx: PaymentsContext) => {
      checkoutPage(ctx, { operatorMayRead: false })
      return cancelCheckout(ctx.domain, args.browserToken)
    },
    lockCheckout: (_: unknown, args: MutationLockCheckoutArgs, ctx: PaymentsContext) => {
      checkoutPage(ctx, { operatorMayRead: false })
      return lockCheckout(ctx.domain, args.browserToken)
    },
    registerCreatorProof: (_: unknown, args: MutationRegisterCreatorProofArgs, ctx: PaymentsContext) =>
      registerCreatorProof(ctx.domain, { appDid: appOnly(ctx), input: args.input }),
    declinePaymentRecord: (_: unknown, args: MutationDeclinePaymentRecordArgs, ctx: PaymentsContext) =>
      declinePaymentRecord(ctx.domain, { appDid: appOnly(ctx), input: args.input }),
    registerAppLink: (_: unknown, args: MutationRegisterAppLinkArgs, ctx: PaymentsContext) =>
      registerAppLink(ctx.domain, { appDid: appOnly(ctx), input: args.input }),
  },
}
