import { APP_CONFIG_FIELDS, appConfigOutput, webhookOutput, type AppConfigData } from './app-config-output'
import { assertOnlyKeys } from './strict-body'
import type { GatewayMethod } from './types'

const PLATFORM_OWNED = new Set(['ticketFee.bps', 'ticketFee.flatAmount', 'ticketFee.flatCurrency', 'feeShareBps'])

export const updateConfig: GatewayMethod<{ updateAppConfig: AppConfigData }> = {
  nsid: 'money.svc.app.updateConfig',
  auth: 'app',
  operation: `mutation UpdateConfig($input: UpdateAppConfigInput!) { updateAppConfig(input: $input) { ${APP_CONFIG_FIELDS} } }`,
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
      },
      (field) =>
        PLATFORM_OWNED.has(field)
          ? `${field} is platform-owned and cannot be updated`
          : `${field} is not an updatable configuration field`,
    ),
  variables: ({ input }) => ({ input }),
  output: ({ updateAppConfig: c }) => ({
    environment: c.environment,
    webhook: webhookOutput(c.webhook),
    appConfig: appConfigOutput(c),
  }),
}
