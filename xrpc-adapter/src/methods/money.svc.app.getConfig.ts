import { graphql } from '@svc/graph'
import { appConfigOutput, webhookOutput } from './app-config-output'
import type { HandlerContext } from './types'

const GET_CONFIG = graphql(`query GetConfig($environment: String!) { appConfig(environment: $environment) { ...AppConfigFields } }`)

export async function getConfig({ params, graph }: HandlerContext<'money.svc.app.getConfig'>) {
  const { appConfig: c } = await graph(GET_CONFIG, { environment: params.environment })
  return {
    appDid: c.appDid,
    environment: c.environment,
    appUrl: c.appUrl,
    feeShareBps: c.feeShareBps,
    webhook: webhookOutput(c.webhook),
    appConfig: appConfigOutput(c),
  }
}
