/** The app environment an app call acts in (the AppAccess entity the gateway hands to the other subgraphs). */
import { ContractError } from '@svc/errors'
import { parseEnvironment, type Environment } from '@svc/vocabulary'
import type { AppsDomain } from './context'
import { findAppEnvironment } from './app-environment'
import type { AppAccess } from '../generated/graph-types'

/** The SDL's AppAccess without its resolved fields (recipientApproval, config, the other subgraphs' extensions), its environment parsed. */
export type AppAccessView = Pick<AppAccess, 'appDid'> & { environment: Environment }

/**
 * The environment an app call acts in: the one given (it must be configured for the app), or, when absent,
 * the app's only configured environment; an app configured for both must say which (InvalidRequest).
 * AppNotRegistered / AppEnvironmentNotConfigured as findAppEnvironment.
 */
export async function resolveAppAccess(d: Pick<AppsDomain, 'models'>, appDid: string, environmentRaw: unknown): Promise<AppAccessView> {
  if (environmentRaw !== undefined && environmentRaw !== null) {
    const environment = parseEnvironment(environmentRaw)
    await findAppEnvironment(d, appDid, environment)
    return { appDid, environment }
  }
  const configured = await d.models.AppEnvironment.find({ appDid }, { environment: 1 }).lean()
  const environments = [...new Set(configured.map((c) => c.environment as Environment))].sort().reverse() // test, live
  const only = environments.length === 1 ? environments[0] : undefined
  if (only) return { appDid, environment: only }
  if (environments.length > 1) {
    throw new ContractError('InvalidRequest', `environment is required: this app is configured for ${environments.join(' and ')}`)
  }
  if (!(await d.models.App.exists({ did: appDid }))) throw new ContractError('AppNotRegistered', `app ${appDid} is not registered`)
  throw new ContractError('AppEnvironmentNotConfigured', `app ${appDid} has no configured environment`)
}
