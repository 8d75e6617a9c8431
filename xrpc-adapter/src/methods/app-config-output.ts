/**
 * The contract's appConfig / webhook objects, from the gateway's AppEnvironmentConfig. `webhook` also carries this
 * implementation's `channel` (always) and `url` / `receiverUrl` (when set); docs/events.md, "Channels".
 */
import { graphql, type ResultOf } from '@svc/graph'
import type { MoneySvcAppGetConfigWebhook } from '@svc/lexicons/types'

export const APP_CONFIG_FIELDS = graphql(`fragment AppConfigFields on AppEnvironmentConfig {
  appDid environment appUrl feeShareBps
  webhook { configured url paused channel receiverUrl }
  modules { tickets }
  ticketing { qrPasses walletPasses }
  ticketFee { bps flatAmount flatCurrency passToBuyer }
}`)

/** The configuration as the apps subgraph's SDL declares it (the fragment above). */
export type AppConfigData = ResultOf<typeof APP_CONFIG_FIELDS>

/** The lexicons' webhook object (getConfig's; updateConfig's adds the signing secret when it answers it). */
export function webhookOutput(w: AppConfigData['webhook']): MoneySvcAppGetConfigWebhook {
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
