/**
 * money.svc.app.updateConfig: the apps subgraph's partial update, which also has the events domain create the
 * environment's signing secret when the result leaves a channel configured (docs/events.md, "Signing secrets"). The
 * update that first configures a channel, and every update naming the channel (`eventChannel`) or its URL, return
 * it as `webhook.signingSecret`; other responses have none.
 */
import { graphql } from '@svc/graph'
import { INPUT_KEYS } from '@svc/lexicons/types'
import { appConfigOutput, webhookOutput } from './app-config-output'
import { assertOnlyKeys } from './strict-body'
import type { HandlerContext } from './types'

const UPDATE_CONFIG = graphql(`mutation UpdateConfig($input: UpdateAppConfigInput!) {
  updateAppConfig(input: $input) { config { ...AppConfigFields } signingSecret }
}`)

const PLATFORM_OWNED = new Set(['ticketFee.bps', 'ticketFee.flatAmount', 'ticketFee.flatCurrency', 'feeShareBps'])

export async function updateConfig({ input, graph }: HandlerContext<'money.svc.app.updateConfig'>) {
  assertOnlyKeys(input, INPUT_KEYS['money.svc.app.updateConfig'], (field) =>
    PLATFORM_OWNED.has(field) ? `${field} is platform-owned and cannot be updated` : `${field} is not an updatable configuration field`,
  )
  const { updateAppConfig } = await graph(UPDATE_CONFIG, { input })
  const { config: c, signingSecret } = updateAppConfig
  return {
    environment: c.environment,
    webhook: signingSecret ? { ...webhookOutput(c.webhook), signingSecret } : webhookOutput(c.webhook),
    appConfig: appConfigOutput(c),
  }
}
