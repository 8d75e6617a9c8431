/**
 * The developer utility routes' API-key checks, in this order (docs/decisions.md, docs/events.md):
 * a known, unrevoked key (Unauthorized) → the app parameter (AppRequired; test-event and redrive take the key's app
 * when it is absent) → the key is for that app and
 * environment (Unauthorized; the environment defaults to the key's) → live, where the route refuses it
 * (LiveDeveloperActionUnsupported) → the key holds the route's permission (Unauthorized) → a configuration exists
 * (AppConfigNotFound).
 *
 * GET {checkout_url}/api/app/developer/config reads the developer configuration (app.config.read, developer-config.ts);
 * the other routes (test-event, deliveries, redrive) run `developerAccess` first and then act in the events subgraph
 * on the app and environment it established.
 */
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'
import type { AppEnvironmentDoc } from '../models'
import { API_KEY_PERMISSIONS } from '../models'
import type { AppsDomain } from './context'
import { findActiveKey, isPermission } from './api-keys'
import { eventEndpointOf } from './event-endpoint'
import type { DeveloperAccess as DeveloperAccessView } from '../generated/graph-types'

/** What a developer utility route may act on: the checked app environment, the key's display prefix, where events go. */
export type { DeveloperAccessView }

export interface AuthorizeOptions {
  /** false for routes that mutate: a live key is LiveDeveloperActionUnsupported (after the binding, which refuses a test key naming live) */
  liveAllowed?: boolean
}

/**
 * The routes whose contract lists AppRequired: the developer configuration and the delivery log. Test-event and
 * redrive list no such error, so without `app` they act on the app the key is bound to (each key is bound to one).
 */
const APP_REQUIRED: readonly string[] = ['app.config.read', 'webhook.deliveries.read']

export async function authorizeApiKey(
  d: Pick<AppsDomain, 'models'>,
  keyHash: string,
  permission: string,
  app: string | null | undefined,
  environment: string | null | undefined,
  opts: AuthorizeOptions = {},
) {
  const key = await findActiveKey(d, keyHash)
  if (!key) throw new ContractError('Unauthorized', 'unknown or revoked API key')
  if (!app && APP_REQUIRED.includes(permission)) throw new ContractError('AppRequired', 'the app query parameter (app DID) is required')
  if (app && key.appDid !== app) throw new ContractError('Unauthorized', 'this API key is not valid for that app')
  if (environment && environment !== key.environment) {
    throw new ContractError('Unauthorized', `this API key is valid only in the ${key.environment} environment`)
  }
  if (key.environment === 'live' && opts.liveAllowed === false) {
    throw new ContractError('LiveDeveloperActionUnsupported', 'this developer action is available in the test environment only; use a test key')
  }
  if (!key.permissions.includes(permission)) throw new ContractError('Unauthorized', `this API key lacks the ${permission} permission`)
  return { appDid: key.appDid, environment: key.environment as Environment, keyPrefix: key.keyPrefix }
}

/** The last check: the key's app environment has a configuration (AppConfigNotFound). */
export async function findDeveloperConfig(d: Pick<AppsDomain, 'models'>, appDid: string, environment: Environment): Promise<AppEnvironmentDoc> {
  const config = await d.models.AppEnvironment.findOne({ appDid, environment }).lean()
  if (!config) throw new ContractError('AppConfigNotFound', `no ${environment} configuration for ${appDid}`)
  return config
}

export function webhookState(config: AppEnvironmentDoc): DeveloperAccessView['webhook'] {
  const endpoint = eventEndpointOf(config)
  const disabled = config.webhook?.disabledReason ? { reason: config.webhook.disabledReason, at: (config.webhook.disabledAt ?? new Date(0)).toISOString() } : null
  return { configured: endpoint.configured, paused: endpoint.paused, channel: endpoint.channel, disabled }
}

/** The precheck of a developer utility route: the key's checks for `permission`, then the configuration. */
export async function getDeveloperAccess(
  d: Pick<AppsDomain, 'models'>,
  keyHash: string,
  args: { app?: string | null; environment?: string | null; permission: string; liveAllowed?: boolean | null },
): Promise<DeveloperAccessView> {
  if (!isPermission(args.permission)) {
    throw new ContractError('InvalidRequest', `permission must be one of ${API_KEY_PERMISSIONS.join(', ')}`)
  }
  const key = await authorizeApiKey(d, keyHash, args.permission, args.app, args.environment, { liveAllowed: args.liveAllowed ?? true })
  const config = await findDeveloperConfig(d, key.appDid, key.environment)
  return { appDid: key.appDid, environment: key.environment, keyPrefix: key.keyPrefix, webhook: webhookState(config) }
}
