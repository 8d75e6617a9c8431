/** The configuration of one app environment, as every use case that needs a configured app looks it up. */
import { ContractError } from '@svc/errors'
import { inTurn } from '@svc/subgraph-server'
import type { Environment } from '@svc/vocabulary'
import type { Logger } from 'pino'
import type { AppsModels } from '../models'

/** AppNotRegistered when the DID has no registration; AppEnvironmentNotConfigured when the environment has no configuration. */
export async function findAppEnvironment(d: { models: AppsModels }, appDid: string, environment: Environment) {
  const config = await d.models.AppEnvironment.findOne({ appDid, environment }).lean()
  if (config) return config
  // Only a miss needs to tell the two errors apart.
  if (!(await d.models.App.exists({ did: appDid }))) throw new ContractError('AppNotRegistered', `app ${appDid} is not registered`)
  throw new ContractError('AppEnvironmentNotConfigured', `app ${appDid} has no ${environment} configuration`)
}

/**
 * One write of an app environment at a time: the app's updateConfig, the events workers disabling its endpoint, an
 * operator's registration and the signing secret's mark each write in the environment's turn (`app_environment_turns`).
 * On FerretDB two overlapping updates of one document keep only one of them (docs/decisions.md): an app's update could
 * put back an endpoint the workers had just disabled, or an operator's lower fee share could be lost.
 */
export function inAppEnvironmentTurn<T>(d: { models: AppsModels; logger?: Logger }, appDid: string, environment: Environment, write: () => Promise<T>): Promise<T> {
  return inTurn(d.models.AppEnvironmentTurn, `${environment} ${appDid}`, write, { logger: d.logger, busyMessage: 'another change of this app environment is in progress; retry' })
}
