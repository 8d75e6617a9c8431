/** The configuration of one app environment, as every use case that needs a configured app looks it up. */
import { ContractError } from '@svc/errors'
import type { Environment } from '@svc/vocabulary'
import type { AppsDomain } from './context'

/** AppNotRegistered when the DID has no registration; AppEnvironmentNotConfigured when the environment has no configuration. */
export async function findAppEnvironment(d: Pick<AppsDomain, 'models'>, appDid: string, environment: Environment) {
  const config = await d.models.AppEnvironment.findOne({ appDid, environment }).lean()
  if (config) return config
  // Only a miss needs to tell the two errors apart.
  if (!(await d.models.App.exists({ did: appDid }))) throw new ContractError('AppNotRegistered', `app ${appDid} is not registered`)
  throw new ContractError('AppEnvironmentNotConfigured', `app ${appDid} has no ${environment} configuration`)
}
