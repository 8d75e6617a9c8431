/**
 * money.svc.app.updateConfig: the apps subgraph's partial update; then, when the result leaves a channel configured,
 * the events subgraph's ensureSigningSecret for that app environment (docs/events.md, "Signing secrets"). Only the
 * call that created the first secret gets it back, as `webhook.signingSecret`; every other response has none.
 */
import { APP_CONFIG_FIELDS, appConfigOutput, webhookOutput, type AppConfigData } from './app-config-output'
import { assertOnlyKeys } from './strict-body'
import type { GatewayMethod } from './types'

const PLATFORM_OWNED = new Set(['ticketFee.bps', 'ticketFee.flatAmount', 'ticketFee.flatCurrency', 'feeShareBps'])

interface EnsureSigningSecretData {
  ensureSigningSecret: { secret: string | null }
}

export const updateConfig: GatewayMethod<{ updateAppConfig: AppConfigData }, EnsureSigningSecretData> = {
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
  followUp: {
    operation: `mutation EnsureSigningSecret($appDid: ID!, $environment: String!) {
      ensureSigningSecret(appDid: $appDid, environment: $environment) { secret }
    }`,
    variables: ({ updateAppConfig: c }) => (c.webhook.configured ? { appDid: c.appDid, environment: c.environment } : null),
  },
  output: ({ updateAppConfig: c }, _call, ensured) => {
    const secret = ensured?.ensureSigningSecret.secret
    return {
      environment: c.environment,
      webhook: secret ? { ...webhookOutput(c.webhook), signingSecret: secret } : webhookOutput(c.webhook),
      appConfig: appConfigOutput(c),
    }
  },
}
