/**
 * money.svc.app.updateConfig: the apps subgraph's partial update, which also has the events domain create the
 * environment's signing secret when the result leaves a channel configured (docs/events.md, "Signing secrets"). Only
 * the call that created the first secret gets it back, as `webhook.signingSecret`; every other response has none.
 */
import { appConfigOutput, webhookOutput } from './app-config-output'
import { assertOnlyKeys } from './strict-body'
import { graphql } from '@svc/graph'
import { gatewayMethod } from './types'

const PLATFORM_OWNED = new Set(['ticketFee.bps', 'ticketFee.flatAmount', 'ticketFee.flatCurrency', 'feeShareBps'])

export const updateConfig = gatewayMethod({
  nsid: 'money.svc.app.updateConfig',
  auth: 'app',
  operation: graphql(`mutation UpdateConfig($input: UpdateAppConfigInput!) { updateAppConfig(input: $input) { config { ...AppConfigFields } signingSecret } }`),
  check: ({ input }) =>
    assertOnlyKeys(
      input,
      {
        environment: true,
        modules: { tickets: true },
        ticketing: { qrPasses: true, walletPasses: true },
        ticketFee: { passToBuyer: true },
        webhookUrl: true,
        appUrl: true,
        eventChannel: true,
        receiverUrl: true,
        webhookPaused: true,
      },
      (field) =>
        PLATFORM_OWNED.has(field)
          ? `${field} is platform-owned and cannot be updated`
          : `${field} is not an updatable configuration field`,
    ),
  variables: ({ input }) => ({ input }),
  output: ({ updateAppConfig: { config: c, signingSecret: secret } }) => {
    return {
      environment: c.environment,
      webhook: secret ? { ...webhookOutput(c.webhook), signingSecret: secret } : webhookOutput(c.webhook),
      appConfig: appConfigOutput(c),
    }
  },
})
