/** money.svc.app.getConfig: the app's own configuration of one environment. */
import { parseEnvironment } from '@svc/vocabulary'
import type { AppsDomain } from './context'
import { findAppEnvironment } from './app-environment'
import { toAppConfigView, type AppConfigView } from './app-config-view'

export async function getAppConfig(d: Pick<AppsDomain, 'models'>, appDid: string, environmentRaw: unknown): Promise<AppConfigView> {
  const environment = parseEnvironment(environmentRaw)
  return toAppConfigView(await findAppEnvironment(d, appDid, environment))
}
