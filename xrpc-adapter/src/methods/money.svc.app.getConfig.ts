import { appConfigOutput, webhookOutput } from './app-config-output'
import { graphql } from '@svc/graph'
import { gatewayMethod } from './types'

export const getConfig = gatewayMethod({
  nsid: 'money.svc.app.getConfig',
  auth: 'app',
  operation: graphql(`query GetConfig($environment: String!) { appConfig(environment: $environment) { ...AppConfigFields } }`),
  variables: ({ params }) => ({ environment: params.environment }),
  output: ({ appConfig: c }) => ({
    appDid: c.appDid,
    environment: c.environment,
    appUrl: c.appUrl,
    feeShareBps: c.feeShareBps,
    webhook: webhookOutput(c.webhook),
    appConfig: appConfigOutput(c),
  }),
})
