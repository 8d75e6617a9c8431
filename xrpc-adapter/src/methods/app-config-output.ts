/** The contract's appConfig / webhook objects, from the gateway's AppEnvironmentConfig. */
export const APP_CONFIG_FIELDS = `
  appDid environment appUrl feeShareBps
  webhook { configured url paused }
  modules { tickets }
  ticketing { qrPasses walletPasses }
  ticketFee { bps flatAmount flatCurrency passToBuyer }
`

export interface AppConfigData {
  appDid: string
  environment: string
  appUrl: string
  feeShareBps: number
  webhook: { configured: boolean; url: string | null; paused: boolean }
  modules: { tickets: boolean }
  ticketing: { qrPasses: boolean; walletPasses: boolean }
  ticketFee: { bps: number; flatAmount: number; flatCurrency: string; passToBuyer: boolean }
}

export function webhookOutput(w: AppConfigData['webhook']) {
  return w.url ? { configured: w.configured, url: w.url, paused: w.paused } : { configured: w.configured, paused: w.paused }
}

export function appConfigOutput(c: AppConfigData) {
  return { modules: c.modules, ticketing: c.ticketing, ticketFee: c.ticketFee }
}
