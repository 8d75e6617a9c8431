/**
 * The contract's appConfig / webhook objects, from the gateway's AppEnvironmentConfig. `webhook` also carries this
 * implementation's `channel` (always) and `url` / `receiverUrl` (when set); docs/events.md, "Channels".
 */
export const APP_CONFIG_FIELDS = `
  appDid environment appUrl feeShareBps
  webhook { configured url paused channel receiverUrl }
  modules { tickets }
  ticketing { qrPasses walletPasses }
  ticketFee { bps flatAmount flatCurrency passToBuyer }
`

export interface AppConfigData {
  appDid: string
  environment: string
  appUrl: string
  feeShareBps: number
  webhook: { configured: boolean; url: string | null; paused: boolean; channel: string; receiverUrl: string | null }
  modules: { tickets: boolean }
  ticketing: { qrPasses: boolean; walletPasses: boolean }
  ticketFee: { bps: number; flatAmount: number; flatCurrency: string; passToBuyer: boolean }
}

export interface WebhookOutput {
  configured: boolean
  url?: string
  paused: boolean
  channel: string
  receiverUrl?: string
}

export function webhookOutput(w: AppConfigData['webhook']): WebhookOutput {
  return {
    configured: w.configured,
    ...(w.url ? { url: w.url } : {}),
    paused: w.paused,
    channel: w.channel,
    ...(w.receiverUrl ? { receiverUrl: w.receiverUrl } : {}),
  }
}

export function appConfigOutput(c: AppConfigData) {
  return { modules: c.modules, ticketing: c.ticketing, ticketFee: c.ticketFee }
}
