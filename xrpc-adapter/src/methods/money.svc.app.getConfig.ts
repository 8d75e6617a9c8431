import { APP_CONFIG_FIELDS, appConfigOutput, webhookOutput, type AppConfigData } from './app-config-output'
import type { GatewayMethod } from './types'

export const getConfig: GatewayMethod<'money.svc.app.getConfig', { appConfig: AppConfigData }> = {
  nsid: 'money.svc.app.getConfig',
  auth: 'app',
  operation: `query GetConfig($environment: String!) { appConfig(environment: $environment) { ${APP_CONFIG_FIELDS} } }`,
  variables: ({ params }) => ({ environment: params.environment }),
  output: ({ appConfig: c }) => ({
    appDid: c.appDid,
    environment: c.environment,
    appUrl: c.appUrl,
    feeShareBps: c.feeShareBps,
    webhook: webhookOutput(c.webhook),
    appConfig: appConfigOutput(c),
  }),
}
