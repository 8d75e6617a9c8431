/**
 * GET {checkout_url}/api/app/developer/config, checked in this order:
 * a known, unrevoked key (Unauthorized) → the app parameter (AppRequired) → the key is for that app and
 * environment and holds app.config.read (Unauthorized) → a configuration exists (AppConfigNotFound).
 */
import { ContractError } from '@svc/errors'
import type { AppsModels } from '../models'
import { findActiveKey } from './api-keys'
import type { Environment } from './environment'

export interface DeveloperConfigView {
  appDid: string
  environment: Environment
  status: string
  webhook: { configured: boolean; paused: boolean }
  modules: { payments: boolean; products: boolean; tickets: boolean }
}

export async function authorizeApiKey(
  models: AppsModels,
  keyHash: string,
  permission: string,
  app: string | null | undefined,
  environment: string | null | undefined,
) {
  const key = await findActiveKey(models, keyHash)
  if (!key) throw new ContractError('Unauthorized', 'unknown or revoked API key')
  if (!app) throw new ContractError('AppRequired', 'the app query parameter (app DID) is required')
  if (key.appDid !== app) throw new ContractError('Unauthorized', 'this API key is not valid for that app')
  if (environment && environment !== key.environment) {
    throw new ContractError('Unauthorized', `this API key is valid only in the ${key.environment} environment`)
  }
  if (!key.permissions.includes(permission)) throw new ContractError('Unauthorized', `this API key lacks the ${permission} permission`)
  return { appDid: key.appDid, environment: key.environment as Environment, keyPrefix: key.keyPrefix }
}

export async function getDeveloperConfig(
  models: AppsModels,
  keyHash: string,
  app: string | null | undefined,
  environment: string | null | undefined,
): Promise<DeveloperConfigView> {
  const key = await authorizeApiKey(models, keyHash, 'app.config.read', app, environment)
  const config = await models.AppEnvironment.findOne({ appDid: key.appDid, environment: key.environment }).lean()
  if (!config) throw new ContractError('AppConfigNotFound', `no ${key.environment} configuration for ${key.appDid}`)
  return {
    appDid: config.appDid,
    environment: config.environment as Environment,
    status: config.status,
    webhook: { configured: Boolean(config.webhook?.url), paused: Boolean(config.webhook?.paused) },
    modules: {
      payments: Boolean(config.modules?.payments),
      products: Boolean(config.modules?.products),
      tickets: Boolean(config.modules?.tickets),
    },
  }
}
