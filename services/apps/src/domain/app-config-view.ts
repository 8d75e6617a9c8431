/** The app's configuration of one environment as money.svc.app.getConfig / updateConfig return it. */
import type { AppEnvironmentDoc } from '../models'
import type { Environment } from '@svc/vocabulary'
import { channelOf, eventEndpointOf } from './event-endpoint'
import type { AppEnvironmentConfig as AppConfigView } from '../generated/graph-types'

export type { AppConfigView }

export function toAppConfigView(doc: AppEnvironmentDoc & { updatedAt?: Date }): AppConfigView {
  return {
    appDid: doc.appDid,
    environment: doc.environment as Environment,
    status: doc.status,
    appUrl: doc.appUrl,
    feeShareBps: doc.feeShareBps,
    webhook: {
      configured: eventEndpointOf(doc).configured,
      url: doc.webhook?.url ?? null,
      paused: Boolean(doc.webhook?.paused),
      channel: channelOf(doc),
      receiverUrl: doc.webhook?.receiverUrl ?? null,
    },
    modules: {
      payments: Boolean(doc.modules?.payments),
      products: Boolean(doc.modules?.products),
      tickets: Boolean(doc.modules?.tickets),
    },
    ticketing: { qrPasses: Boolean(doc.ticketing?.qrPasses), walletPasses: Boolean(doc.ticketing?.walletPasses) },
    ticketFee: {
      bps: doc.ticketFee?.bps ?? 0,
      flatAmount: doc.ticketFee?.flatAmount ?? 0,
      flatCurrency: doc.ticketFee?.flatCurrency ?? 'usd',
      passToBuyer: Boolean(doc.ticketFee?.passToBuyer),
    },
    updatedAt: (doc.updatedAt ?? new Date()).toISOString(),
  }
}
