/** The app's configuration of one environment as money.svc.app.getConfig / updateConfig return it. */
import type { AppEnvironmentDoc } from '../models'
import type { Environment } from '@svc/vocabulary'
import { channelOf, eventEndpointOf, type EventChannel } from './event-endpoint'

export interface AppConfigView {
  appDid: string
  environment: Environment
  status: string
  appUrl: string
  feeShareBps: number
  webhook: { configured: boolean; url: string | null; paused: boolean; channel: EventChannel; receiverUrl: string | null }
  modules: { payments: boolean; products: boolean; tickets: boolean }
  ticketing: { qrPasses: boolean; walletPasses: boolean }
  ticketFee: { bps: number; flatAmount: number; flatCurrency: string; passToBuyer: boolean }
  updatedAt: string
}

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
