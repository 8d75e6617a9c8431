/** GET {checkout_url}/api/app/developer/config: the developer configuration, after the key's checks (developer-access.ts). */
import type { Environment } from '@svc/vocabulary'
import type { AppsDomain } from './context'
import { authorizeApiKey, findDeveloperConfig, webhookState } from './developer-access'
import type { DeveloperConfig as DeveloperConfigView } from '../generated/graph-types'

export type { DeveloperConfigView }

export async function getDeveloperConfig(
  d: Pick<AppsDomain, 'models'>,
  keyHash: string,
  app: string | null | undefined,
  environment: string | null | undefined,
): Promise<DeveloperConfigView> {
  const key = await authorizeApiKey(d, keyHash, 'app.config.read', app, environment)
  const config = await findDeveloperConfig(d, key.appDid, key.environment)
  return {
    appDid: config.appDid,
    environment: config.environment as Environment,
    status: config.status,
    webhook: webhookState(config),
    modules: {
      payments: Boolean(config.modules?.payments),
      products: Boolean(config.modules?.products),
      tickets: Boolean(config.modules?.tickets),
    },
  }
}
